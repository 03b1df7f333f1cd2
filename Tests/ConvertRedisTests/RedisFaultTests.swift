import ConvertRedis
import Foundation
import Testing

/// Failures that need no Redis: fake servers and closed ports.
@Suite(.timeLimit(.minutes(1))) struct RedisFaultTests {
    @Test func aRefusedConnectionNamesTheCauseThenFailsFastDuringBackoff() async throws {
        let port = try freeLoopbackPort()
        let client = RedisClient(configuration: RedisConfiguration(port: port, connectTimeout: .seconds(1),
                                                                   reconnectBackoffInitial: .seconds(600), reconnectBackoffMax: .seconds(600)))
        let first = await redisError { try await client.ping() }
        guard case .connectionFailed(let reason)? = first else {
            Issue.record("expected a connection failure, got \(String(describing: first))")
            return
        }
        #expect(reason.contains("ECONNREFUSED"), "\(reason)")
        #expect(reason.contains("127.0.0.1:\(port)"))
        let second = await redisError { try await client.ping() }
        guard case .connectionFailed(let backoff)? = second else {
            Issue.record("expected a connection failure, got \(String(describing: second))")
            return
        }
        #expect(backoff.contains("next connect attempt"), "\(backoff)")
        #expect(backoff.contains("ECONNREFUSED"))
    }

    @Test func aServerThatNeverAnswersTimesOutWithinTheDeadline() async throws {
        // Never accepted: the kernel completes the handshake, nothing ever reads or answers.
        let listener = try LoopbackListener()
        defer { listener.close() }
        let client = RedisClient(configuration: RedisConfiguration(port: listener.port, connectTimeout: .seconds(1),
                                                                   commandTimeout: .milliseconds(300)))
        let started = ContinuousClock.now
        let error = await redisError { try await client.ping() }
        let elapsed = ContinuousClock.now - started
        guard case .timeout(let reason)? = error else {
            Issue.record("expected a timeout, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("no reply"), "\(reason)")
        // It waited for the deadline; without one it would wait until the suite's time limit.
        #expect(elapsed >= .milliseconds(300), "\(elapsed)")
    }

    @Test func aConnectThatHangsCostsACallItsBoundOnlyAndTheBackoffSparesLaterCalls() async throws {
        // A backlog of one, filled: the kernel drops further handshakes, so connects hang.
        let listener = try LoopbackListener(backlog: 0)
        defer { listener.close() }
        let filler = RedisConfiguration(port: listener.port, connectTimeout: .milliseconds(100))
        var held: [RedisConnection] = []
        var hung = false
        for _ in 0..<4 {
            do {
                held.append(try RedisConnection(configuration: filler))
            } catch {
                hung = true
                break
            }
        }
        try #require(hung, "the listen backlog never filled")
        let client = RedisClient(configuration: RedisConfiguration(port: listener.port, connectTimeout: .milliseconds(500),
                                                                   commandTimeout: .milliseconds(200),
                                                                   reconnectBackoffInitial: .seconds(600), reconnectBackoffMax: .seconds(600)))
        defer { client.close() }
        // On a thread of its own: the time measured is the call's, not a wait for a pool thread.
        let thread = ThreadExecutor(name: "hung-connect")
        defer { thread.stop() }
        let (first, elapsed) = await Task(executorPreference: thread) {
            let started = ContinuousClock.now
            let error = await redisError { try await client.ping() }
            return (error, ContinuousClock.now - started)
        }.value
        guard case .timeout(let reason)? = first else {
            Issue.record("expected a timeout, got \(String(describing: first))")
            return
        }
        #expect(reason.contains("200 ms"), "\(reason)")
        // The call waited its own bound, not the connect timeout (500 ms): connects are not the
        // caller's.
        #expect(elapsed >= .milliseconds(200))
        #expect(underThreadSanitizer || elapsed < .milliseconds(250), "\(elapsed)")
        // The connector's attempt ends at its timeout and makes the server unavailable.
        #expect(await eventually { !client.isAvailable })
        guard !underThreadSanitizer else { return }
        for _ in 0..<20 {
            let error = await redisError({ try await client.ping() })
            guard case .connectionFailed(let refusal)? = error else {
                Issue.record("expected a fast connection failure during the backoff, got \(String(describing: error))")
                return
            }
            #expect(refusal.contains("no connection"), "the refusal names the hung connect: \(refusal)")
        }
        _ = held
    }

    @Test func garbageIsAProtocolErrorAndTheConnectionIsNotReused() async throws {
        let server = try GarbageServer(reply: Array("HTTP/1.1 400 Bad Request\r\n\r\n".utf8))
        let client = RedisClient(configuration: RedisConfiguration(port: server.port, commandTimeout: .seconds(1)))
        for attempt in 1...2 {
            let error = await redisError { try await client.ping() }
            guard case .protocolError(let reason)? = error else {
                Issue.record("expected a protocol error, got \(String(describing: error))")
                return
            }
            #expect(reason.contains("0x48"), "\(reason)")  // "H"
            #expect(server.accepted == attempt, "each call needed a new connection")
        }
        #expect(await eventually { server.closedByClient == 2 }, "the client closed both broken connections")
    }

    @Test func aBrokenConnectionRefusesFurtherCommands() throws {
        let server = try GarbageServer(reply: Array("+OK\r\n:12x\r\n".utf8))
        let connection = try RedisConnection(configuration: RedisConfiguration(port: server.port))
        #expect(throws: RedisError.self) { try connection.send([["PING"], ["PING"]]) }
        #expect(!connection.isOpen)
        #expect(throws: RedisError.self) { try connection.send([["PING"]]) }
    }

    @Test func theConfigurationNeverShowsThePassword() {
        let configuration = RedisConfiguration(host: "::1", username: "app", password: "hunter2-secret")
        #expect(configuration.description == "redis://app:***@[::1]:6379/0")
        var dumped = ""
        dump(configuration, to: &dumped)
        #expect(!dumped.contains("hunter2-secret"))
        #expect(!String(reflecting: configuration).contains("hunter2-secret"))
        #expect(!"\(configuration)".contains("hunter2-secret"))
    }
}

/// A real server killed and restarted under a client that keeps running.
@Suite(.enabled(if: RedisServer.isAvailable, "redis-server is not installed (looked in PATH, /usr/bin, /usr/sbin)"),
       .timeLimit(.minutes(1)))
struct RedisRestartTests {
    @Test func aKilledServerFailsFastThenTheSameClientRecoversAfterRestart() async throws {
        let server = try RedisServer()
        let client = RedisClient(configuration: server.configuration())
        try await client.hset("visitor:9", ["f": "before"])
        try await client.ping()

        server.kill()
        var failures: [RedisError] = []
        for _ in 0..<10 {
            if let error = await redisError({ try await client.ping() }) { failures.append(error) }
        }
        #expect(failures.count == 10)
        #expect(failures.allSatisfy { if case .connectionFailed = $0 { true } else { false } }, "\(failures)")
        // None waited for a deadline: that would have failed with `.timeout`, not `.connectionFailed`.

        try server.start()
        #expect(await eventually { (try? client.ping()) != nil }, "the client reconnects after the restart")
        // Nothing persisted: the restarted server is empty, and the client writes to it again.
        #expect(try await client.hgetall("visitor:9") == [:])
        try await client.hset("visitor:9", ["f": "after"])
        #expect(try await client.hgetall("visitor:9") == ["f": Data("after".utf8)])
    }

    @Test func pooledConnectionsToAServerThatRestartedAreReplacedUnnoticed() async throws {
        let server = try RedisServer()
        var configuration = server.configuration()
        configuration.poolSize = 2
        let client = RedisClient(configuration: configuration)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 { group.addTask { try await client.ping() } }
            try await group.waitForAll()
        }
        server.kill()
        try server.start()
        // The pooled connections died with the old server; the next call notices and reconnects.
        try await client.ping()
        try await client.hset("visitor:10", ["f": "v"])
    }
}
