import ConvertRedis
import ConvertStorage
import ConvertSynchronization
import Testing

/// A transport of the test's own that says it encrypts: it opens the plain transport's streams
/// and wraps them, so every byte goes through the port's protocol, and counts its connects.
private final class CountingTransport: RedisTransport {
    let connects = Locked(0)
    var encrypts: Bool { true }

    func connect(_ configuration: RedisConfiguration, deadline: ContinuousClock.Instant) throws(RedisError) -> any RedisStream {
        connects.withValue { $0 += 1 }
        return Wrapped(try RedisPlainTransport().connect(configuration, deadline: deadline))
    }

    private final class Wrapped: RedisStream {
        let inner: any RedisStream
        init(_ inner: any RedisStream) { self.inner = inner }
        var peer: String { inner.peer }
        var descriptor: Int32 { inner.descriptor }
        var isQuiet: Bool { inner.isQuiet }
        func writeAvailable(_ bytes: [UInt8], from offset: Int) throws(RedisError) -> Int { try inner.writeAvailable(bytes, from: offset) }
        func readAvailable(into received: (UnsafeRawBufferPointer) -> Void) throws(RedisError) -> Bool { try inner.readAvailable(into: received) }
        func readWaiting(into received: (UnsafeRawBufferPointer) -> Void) throws(RedisError) -> Bool { try inner.readWaiting(into: received) }
        func wait(writable: Bool, until instant: ContinuousClock.Instant) throws(RedisError) -> Bool {
            try inner.wait(writable: writable, until: instant)
        }
        func close() { inner.close() }
    }
}

/// The blocking `ping()` (in an async context the async overload is chosen).
private func blockingPing(_ client: RedisClient) throws(RedisError) { try client.ping() }

@Suite(.enabled(if: RedisServer.isAvailable, "redis-server is not installed (looked in PATH, /usr/bin, /usr/sbin)"))
struct RedisTransportTests {
    /// A `tls` configuration with a transport that encrypts is served through that transport: the
    /// connector's connections, the blocking and async calls, the I/O thread's polls, and the
    /// probe after the server came back all go through it.
    @Test func aGivenTransportOpensEveryConnection() async throws {
        let server = try await RedisServer.started()
        var configuration = server.configuration(keyPrefix: "transport:")
        configuration.tls = true
        configuration.poolSize = 2
        let transport = CountingTransport()
        let client = RedisClient(configuration: configuration, transport: transport)
        defer { client.close() }
        #expect(client.isAvailable)
        try await client.ping()
        try blockingPing(client)
        let backend = RedisVisitorBackend(client: client)
        let key = VisitorKey(namespace: "1-2", visitorId: "through-the-port")
        _ = try await backend.save(key, VisitorData(bucketing: ["10": "20"]))
        #expect(try await backend.load(key)?.bucketing == ["10": "20"])
        // Concurrent calls: queued ones run on the I/O thread, polling the stream's descriptor.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<40 { group.addTask { try await client.ping() } }
            try await group.waitForAll()
        }
        let opened = transport.connects.value
        #expect(opened >= 1 && opened <= 2, "the pool's connections, all through the transport: \(opened)")

        // After an outage the probe reconnects through it too.
        server.kill()
        _ = await redisError { try await client.ping() }
        try server.start()
        #expect(await eventually { (try? client.ping()) != nil })
        #expect(transport.connects.value > opened)
    }

    /// The plain transport with a `tls` configuration is refused, the error naming the fix.
    @Test func thePlainTransportRefusesTLSNamingTheFix() async throws {
        var configuration = RedisConfiguration(port: 1, password: "plain-SECRET")
        configuration.tls = true
        let client = RedisClient(configuration: configuration, transport: .plain)
        defer { client.close() }
        guard case .tlsUnavailable(let reason)? = await redisError({ try await client.ping() }) else {
            Issue.record("expected the TLS refusal")
            return
        }
        #expect(reason.contains("RedisTLSTransport") && reason.contains("ConvertRedisTLS"), "\(reason)")
        #expect(!reason.contains("SECRET"))
    }

    /// Closed, a refused client answers as any closed client does.
    @Test func aClosedClientSaysItIsClosedBeforeItsRefusal() async throws {
        var configuration = RedisConfiguration(port: 1)
        configuration.tls = true
        let client = RedisClient(configuration: configuration, transport: .plain)
        client.close()
        guard case .clientClosed? = await redisError({ try await client.ping() }) else {
            Issue.record("expected clientClosed: \(String(describing: await redisError({ try await client.ping() })))")
            return
        }
        guard case .clientClosed? = await redisError({ try client.ping() }) else {
            Issue.record("expected clientClosed from the blocking call too")
            return
        }
    }
}
