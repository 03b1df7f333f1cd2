import ConvertRedis
@testable import ConvertRedisTLS
import ConvertStorage
import Foundation
import Testing

/// A configuration for 127.0.0.1:`port` over TLS with bounds short enough for a test.
private func configuration(_ port: Int, host: String = "127.0.0.1", password: String? = nil) -> RedisConfiguration {
    RedisConfiguration(host: host, port: port, password: password, keyPrefix: "tls:", connectTimeout: .seconds(2),
                       commandTimeout: .seconds(2), reconnectBackoffInitial: .milliseconds(20),
                       reconnectBackoffMax: .milliseconds(200), tls: true)
}

/// The error a call throws, or `nil`.
private func redisError(_ body: () async throws -> Void) async -> RedisError? {
    do {
        try await body()
        return nil
    } catch {
        return error as? RedisError ?? .connectionFailed(reason: "not a RedisError: \(error)")
    }
}

/// The blocking `ping()` (in an async context the async overload is chosen).
private func blockingPing(_ client: RedisClient) throws(RedisError) { try client.ping() }

/// Writes `command` (RESP) on `stream` and reads one reply line, within 2 s.
private func exchange(_ stream: any RedisStream, _ command: [String]) throws -> String {
    var bytes = Array("*\(command.count)\r\n".utf8)
    for part in command { bytes += Array("$\(part.utf8.count)\r\n\(part)\r\n".utf8) }
    var written = 0
    while written < bytes.count { written += try stream.writeAvailable(bytes, from: written) }
    var reply: [UInt8] = []
    let deadline = ContinuousClock.now + .seconds(2)
    while !reply.contains(text: "\r\n") || (reply.first == UInt8(ascii: "$") && reply.count(where: { $0 == 10 }) < 2) {
        guard try stream.wait(writable: false, until: deadline) else { throw TestError("no reply within 2 s") }
        _ = try stream.readAvailable { reply += $0 }
    }
    return String(decoding: reply, as: UTF8.self)
}

@Suite(.enabled(if: missingTools == nil, "\(missingTools ?? "")"), .serialized)
struct RedisTLSTransportTests {
    @Test func aVerifiedConnectionCarriesCommandsAndVisitorData() async throws {
        let certificates = try Certificates()
        let server = try TLSRedisServer(certificates: certificates, password: "tls-secret")
        let transport = try RedisTLSTransport(RedisTLSConfiguration(caFile: certificates.path("ca.crt")))

        // The stream itself: SET and GET over TLS, by address (checked against the IP SAN).
        let stream = try transport.connect(configuration(server.tlsPort), deadline: .now + .seconds(2))
        // What a TLS 1.3 server sends after the handshake (session tickets) leaves the
        // connection idle, as the pool needs to reuse it.
        try await Task.sleep(for: .milliseconds(200))
        #expect(stream.isQuiet, "idle after the handshake")
        #expect(try #require(stream as? TLSStream).buffered == 0)
        #expect(try exchange(stream, ["AUTH", "tls-secret"]) == "+OK\r\n")
        #expect(try exchange(stream, ["SET", "greeting", "hello over tls"]) == "+OK\r\n")
        #expect(try exchange(stream, ["GET", "greeting"]) == "$14\r\nhello over tls\r\n")
        #expect(stream.isQuiet)
        stream.close()
        #expect(stream.descriptor < 0)

        // The client and the visitor backend, by name (checked against the DNS SAN).
        let client = RedisClient(configuration: configuration(server.tlsPort, host: "localhost", password: "tls-secret"),
                                 transport: transport)
        defer { client.close() }
        try await client.ping()
        try blockingPing(client)
        let backend = RedisVisitorBackend(client: client)
        let key = VisitorKey(namespace: "10-20", visitorId: "visitor-over-tls")
        _ = try await backend.save(key, VisitorData(bucketing: ["100": "200"], goals: ["goal-1"]))
        let loaded = try await backend.load(key)
        #expect(loaded?.bucketing == ["100": "200"])
        #expect(loaded?.goals == ["goal-1"])

        // The convenience: a rediss:// URL and the CA file.
        let fromURL = try RedisClient(url: "rediss://:tls-secret@127.0.0.1:\(server.tlsPort)/0",
                                      tls: RedisTLSConfiguration(caFile: certificates.path("ca.crt")))
        defer { fromURL.close() }
        try await fromURL.ping()
        #expect(try await RedisVisitorBackend(client: fromURL).load(key) == nil, "no key prefix on this client")
    }

    /// A reply larger than a socket's buffers: while nobody reads, the stream holds none of it
    /// (it waits in the kernel); reading takes it, and the whole reply arrives.
    @Test func whatTheStreamBuffersIsBounded() async throws {
        let certificates = try Certificates()
        let server = try TLSRedisServer(certificates: certificates)
        let transport = try RedisTLSTransport(RedisTLSConfiguration(caFile: certificates.path("ca.crt")))
        let stream = try transport.connect(configuration(server.tlsPort), deadline: .now + .seconds(2))
        defer { stream.close() }
        let size = 3 * 1024 * 1024
        #expect(try exchange(stream, ["SET", "big", String(repeating: "x", count: size)]) == "+OK\r\n")
        let get = Array("*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n".utf8)
        #expect(try stream.writeAvailable(get, from: 0) == get.count)
        try await Task.sleep(for: .milliseconds(500))
        #expect(try #require(stream as? TLSStream).buffered == 0, "decrypted before anyone read")

        var received = 0
        let deadline = ContinuousClock.now + .seconds(5)
        let expected = "$\(size)\r\n".utf8.count + size + 2
        while received < expected {
            guard try stream.wait(writable: false, until: deadline) else { break }
            _ = try stream.readAvailable { received += $0.count }
        }
        #expect(received == expected)
        #expect(stream.isQuiet)
    }

    /// A pipeline of several MiB through the client (its I/O thread's polls): the socket takes
    /// the ciphertext in parts, and every write and read-back arrives.
    @Test func aPipelineLargerThanTheSocketsBuffersGoesThrough() async throws {
        let certificates = try Certificates()
        let server = try TLSRedisServer(certificates: certificates)
        let transport = try RedisTLSTransport(RedisTLSConfiguration(caFile: certificates.path("ca.crt")))
        let client = RedisClient(configuration: configuration(server.tlsPort), transport: transport)
        defer { client.close() }
        let backend = RedisVisitorBackend(client: client)
        let filler = String(repeating: "s", count: 2_000)
        let records = (0..<2_000).map { n in
            (VisitorKey(namespace: "10-20", visitorId: "big-\(n)"),
             VisitorData(bucketing: ["100": "20\(n % 2)"], segments: VisitorSegments(customSegments: [filler + "\(n)"])))
        }
        let saved = try await backend.saveAll(records)
        #expect(saved.count == records.count)
        #expect(zip(saved, records).allSatisfy { $0.segments == $1.1.segments && $0.bucketing == $1.1.bucketing })
        #expect(try await backend.load(records[1_999].0)?.segments == records[1_999].1.segments)
    }

    @Test func anUntrustedChainIsRefusedNamingIt() async throws {
        let certificates = try Certificates()
        let server = try TLSRedisServer(certificates: certificates)
        let transport = try RedisTLSTransport(RedisTLSConfiguration(caFile: certificates.path("other-ca.crt")))
        try await expectRefusal(transport, configuration(server.tlsPort), naming: "not trusted")
        // The system's roots do not know the test CA either.
        try await expectRefusal(RedisTLSTransport(), configuration(server.tlsPort), naming: "not trusted")
    }

    @Test func anExpiredCertificateIsRefusedNamingIt() async throws {
        let certificates = try Certificates()
        let server = try TLSRedisServer(certificates: certificates, certificate: "expired")
        let transport = try RedisTLSTransport(RedisTLSConfiguration(caFile: certificates.path("ca.crt")))
        try await expectRefusal(transport, configuration(server.tlsPort), naming: "expired")
    }

    @Test func aCertificateForAnotherNameIsRefusedNamingIt() async throws {
        let certificates = try Certificates()
        let server = try TLSRedisServer(certificates: certificates, certificate: "other-name")
        let transport = try RedisTLSTransport(RedisTLSConfiguration(caFile: certificates.path("ca.crt")))
        // By address: the certificate has no IP address; by name: not its name.
        try await expectRefusal(transport, configuration(server.tlsPort), naming: "name mismatch")
        try await expectRefusal(transport, configuration(server.tlsPort, host: "localhost"), naming: "name mismatch")
        // The name it carries, given as the server name, is accepted.
        let named = try RedisTLSTransport(RedisTLSConfiguration(caFile: certificates.path("ca.crt"), serverName: "other.example"))
        let client = RedisClient(configuration: configuration(server.tlsPort), transport: named)
        defer { client.close() }
        try await client.ping()
    }

    @Test func aPlaintextServerBehindRedissIsRefusedWithinTheConnectTimeout() async throws {
        let certificates = try Certificates()
        let server = try TLSRedisServer(certificates: certificates, tls: false)
        let transport = try RedisTLSTransport(RedisTLSConfiguration(caFile: certificates.path("ca.crt")))
        let started = ContinuousClock.now
        let error = await redisError { _ = try transport.connect(configuration(server.plainPort), deadline: .now + .seconds(2)) }
        let elapsed = ContinuousClock.now - started
        switch error {
        case .tlsFailed(let reason)?:
            #expect(reason.contains("plaintext"), "\(reason)")
        case .timeout(let reason)?:
            // A server that waits for the rest of a line never answers the client hello.
            #expect(reason.contains("TLS handshake") && reason.contains("plaintext"), "\(reason)")
        default:
            Issue.record("expected a TLS failure naming plaintext, got \(String(describing: error))")
        }
        #expect(elapsed < .milliseconds(2_500), "took \(elapsed)")

        let client = RedisClient(configuration: configuration(server.plainPort), transport: transport)
        defer { client.close() }
        let clientStarted = ContinuousClock.now
        let clientError = await redisError { try await client.ping() }
        #expect(clientError != nil)
        #expect(ContinuousClock.now - clientStarted < .milliseconds(2_500))
    }

    @Test func aServerRequiringClientCertificatesRefusesNoneAndAcceptsOne() async throws {
        let certificates = try Certificates()
        let server = try TLSRedisServer(certificates: certificates, requireClientCertificates: true)

        let anonymous = try RedisTLSTransport(RedisTLSConfiguration(caFile: certificates.path("ca.crt")))
        let client = RedisClient(configuration: configuration(server.tlsPort), transport: anonymous)
        defer { client.close() }
        let error = await redisError { try await client.ping() }
        guard case .tlsFailed(let reason)? = error else {
            Issue.record("expected a TLS failure, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("client certificate"), "\(reason)")

        let identified = try RedisTLSTransport(RedisTLSConfiguration(
            caFile: certificates.path("ca.crt"),
            clientCertificate: .files(chain: certificates.path("client.crt"), privateKey: certificates.path("client.key"))))
        let mutual = RedisClient(configuration: configuration(server.tlsPort), transport: identified)
        defer { mutual.close() }
        try await mutual.ping()

        // The same identity given as PEM bytes.
        let pem = try RedisTLSTransport(RedisTLSConfiguration(
            trustRoots: .pem(Array(try Data(contentsOf: URL(fileURLWithPath: certificates.path("ca.crt"))))),
            clientCertificate: .pem(chain: Array(try Data(contentsOf: URL(fileURLWithPath: certificates.path("client.crt")))),
                                    privateKey: Array(try Data(contentsOf: URL(fileURLWithPath: certificates.path("client.key")))))))
        let fromBytes = RedisClient(configuration: configuration(server.tlsPort), transport: pem)
        defer { fromBytes.close() }
        try await fromBytes.ping()
    }

    @Test func nothingCrossesTheNetworkInTheClear() async throws {
        let certificates = try Certificates()
        let password = "pw-Zq81-never-in-clear"
        let visitor = "visitor-Xk42-never-in-clear"
        let server = try TLSRedisServer(certificates: certificates, password: password)
        let key = VisitorKey(namespace: "10-20", visitorId: visitor)
        let data = VisitorData(bucketing: ["100": "200"])

        // Over TLS through a recording proxy: neither the password nor the visitor id shows.
        let proxy = try RecordingProxy(target: server.tlsPort)
        let transport = try RedisTLSTransport(RedisTLSConfiguration(caFile: certificates.path("ca.crt")))
        let client = RedisClient(configuration: configuration(proxy.port, password: password), transport: transport)
        defer { client.close() }
        let backend = RedisVisitorBackend(client: client)
        _ = try await backend.save(key, data)
        #expect(try await backend.load(key)?.bucketing == data.bucketing)
        let encrypted = proxy.recorded
        #expect(encrypted.count > 200, "the proxy carried the exchange (\(encrypted.count) bytes)")
        #expect(!encrypted.contains(text: password))
        #expect(!encrypted.contains(text: visitor))
        #expect(!encrypted.contains(text: "AUTH"))

        // The same through a proxy to the plaintext port: the recording does show them.
        let plainProxy = try RecordingProxy(target: server.plainPort)
        var plainConfiguration = configuration(plainProxy.port, password: password)
        plainConfiguration.tls = false
        let plain = RedisClient(configuration: plainConfiguration)
        defer { plain.close() }
        _ = try await RedisVisitorBackend(client: plain).save(key, data)
        #expect(plainProxy.recorded.contains(text: password))
        #expect(plainProxy.recorded.contains(text: visitor))
    }

    @Test func aMissingCAFileIsNamedWithoutThePassword() async throws {
        // A configuration error (a CA file that does not exist) names the file, not a password.
        #expect(throws: RedisError.self) { _ = try RedisTLSTransport(RedisTLSConfiguration(caFile: "/nonexistent/ca.crt")) }
        do {
            _ = try RedisClient(url: "rediss://:url-SECRET@127.0.0.1:6390/0", tls: RedisTLSConfiguration(caFile: "/nonexistent/ca.crt"))
            Issue.record("a missing CA file was accepted")
        } catch {
            #expect(String(describing: error).contains("/nonexistent/ca.crt"))
            #expect(!String(describing: error).contains("SECRET"))
        }
    }

    /// Both the transport and a client over it refuse `configuration`, with a TLS failure whose
    /// reason contains `cause`, within the connect timeout.
    private func expectRefusal(_ transport: RedisTLSTransport, _ configuration: RedisConfiguration, naming cause: String,
                               sourceLocation: SourceLocation = #_sourceLocation) async throws {
        var configuration = configuration
        configuration.password = "refusal-SECRET"
        let started = ContinuousClock.now
        let direct = await redisError { _ = try transport.connect(configuration, deadline: .now + configuration.connectTimeout) }
        let client = RedisClient(configuration: configuration, transport: transport)
        defer { client.close() }
        let viaClient = await redisError { try await client.ping() }
        for error in [direct, viaClient] {
            guard case .tlsFailed(let reason)? = error else {
                Issue.record("expected a TLS failure naming \(cause), got \(String(describing: error))", sourceLocation: sourceLocation)
                continue
            }
            #expect(reason.contains(cause), "\(reason)", sourceLocation: sourceLocation)
            #expect(!(error?.description.contains("SECRET") ?? true), sourceLocation: sourceLocation)
        }
        #expect(ContinuousClock.now - started < .seconds(4), sourceLocation: sourceLocation)
    }
}
