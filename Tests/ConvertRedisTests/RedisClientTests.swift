import ConvertRedis
import Foundation
import Testing

/// The client against a real `redis-server` the test starts.
@Suite(.enabled(if: RedisServer.isAvailable, "redis-server is not installed (looked in PATH, /usr/bin, /usr/sbin)"),
       .timeLimit(.minutes(1)))
struct RedisClientTests {
    @Test func hashesRoundTripWithBinaryValues() async throws {
        let server = try RedisServer()
        let client = RedisClient(configuration: server.configuration())
        let fields: [String: Data] = ["segments": Data("{\"a\":1}".utf8), "raw": Data([0, 13, 10, 255]), "empty": Data()]
        #expect(try await client.hset("visitor:1", fields) == 3)
        #expect(try await client.hgetall("visitor:1") == fields)
        #expect(try await client.hset("visitor:1", ["segments": "{}", "new": "x"]) == 1)
        #expect(try await client.hgetall("visitor:1")["segments"] == Data("{}".utf8))
        #expect(try await client.hgetall("missing") == [:])
        #expect(try await client.del("visitor:1", "missing") == 1)
        #expect(try await client.hgetall("visitor:1") == [:])
    }

    @Test func theSynchronousAPIWorksOffTheCooperativePool() throws {
        let server = try RedisServer()
        let client = RedisClient(configuration: server.configuration())
        try client.ping()
        try client.hset("k", ["f": "v"])
        #expect(try client.hgetall("k") == ["f": Data("v".utf8)])
        #expect(try client.send(["HGET", .key("k"), "f"]).stringValue == "v")
    }

    @Test func hsetnxKeepsTheFirstWriter() async throws {
        let server = try RedisServer()
        let client = RedisClient(configuration: server.configuration())
        let winners = await withTaskGroup(of: Bool.self) { group in
            for writer in 0..<16 {
                group.addTask { (try? await client.hsetnx("visitor:2", "bucket", "writer-\(writer)")) ?? false }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(winners == 1)
        let stored = try await client.hgetall("visitor:2")["bucket"].map { String(decoding: $0, as: UTF8.self) }
        #expect(stored?.hasPrefix("writer-") == true)
        #expect(try await client.hsetnx("visitor:2", "bucket", "late") == false)
        #expect(try await client.hgetall("visitor:2")["bucket"].map { String(decoding: $0, as: UTF8.self) } == stored)
    }

    @Test func expireSetsATimeToLiveReadBackByTTLAndPTTL() async throws {
        let server = try RedisServer()
        let client = RedisClient(configuration: server.configuration(keyPrefix: "p:"))
        #expect(try await client.expire("absent", ttl: .seconds(60)) == false)
        try await client.hset("visitor:3", ["f": "v"])
        #expect(try await client.expire("visitor:3", ttl: .seconds(90)) == true)
        let ttl = try await client.send(["TTL", .key("visitor:3")]).intValue
        let pttl = try await client.send(["PTTL", .key("visitor:3")]).intValue
        // Bounds wide enough for a loaded machine between the commands.
        #expect(ttl.map { (60...90).contains($0) } == true, "TTL \(String(describing: ttl))")
        #expect(pttl.map { (60_000...90_000).contains($0) } == true, "PTTL \(String(describing: pttl))")
        // Sub-second precision survives: PEXPIRE with milliseconds, not EXPIRE with seconds.
        #expect(RedisCommand.expire("k", ttl: .milliseconds(1_500)).arguments == ["PEXPIRE", .key("k"), .integer(1_500)])
        #expect(try await client.expire("visitor:3", ttl: .milliseconds(60_500)) == true)
        let short = try await client.send(["PTTL", .key("visitor:3")]).intValue
        #expect(short.map { (1...60_500).contains($0) } == true, "PTTL \(String(describing: short))")
    }

    @Test func theKeyPrefixIsAppliedToEveryKey() async throws {
        let server = try RedisServer()
        let prefixed = RedisClient(configuration: server.configuration(keyPrefix: "app:"))
        let raw = RedisClient(configuration: server.configuration())
        try await prefixed.hset("visitor:4", ["f": "v"])
        _ = try await prefixed.pipeline([.hset("visitor:5", ["g": Data("w".utf8)])])
        #expect(try await raw.hgetall("app:visitor:4") == ["f": Data("v".utf8)])
        #expect(try await raw.hgetall("app:visitor:5") == ["g": Data("w".utf8)])
        #expect(try await raw.hgetall("visitor:4") == [:])
        let keys = try await raw.send(["KEYS", "*"]).arrayValue?.compactMap(\.stringValue).sorted()
        #expect(keys == ["app:visitor:4", "app:visitor:5"])
        #expect(try await prefixed.del(["visitor:4", "visitor:5"]) == 2)
        #expect(try await raw.send(["DBSIZE"]).intValue == 0)
    }

    @Test func evalRunsAScriptWithPrefixedKeys() async throws {
        let server = try RedisServer()
        let client = RedisClient(configuration: server.configuration(keyPrefix: "app:"))
        let script = "redis.call('HSET', KEYS[1], 'f', ARGV[1]); return {KEYS[1], redis.call('HGET', KEYS[1], 'f')}"
        let reply = try await client.eval(script, keys: ["visitor:6"], args: ["v"])
        #expect(reply == .array([.bulkString(Data("app:visitor:6".utf8)), .bulkString(Data("v".utf8))]))
    }

    @Test func selectIsolatesDatabases() async throws {
        let server = try RedisServer()
        let one = RedisClient(configuration: server.configuration(database: 1))
        let two = RedisClient(configuration: server.configuration(database: 2))
        try await one.hset("shared", ["db": "1"])
        #expect(try await two.hgetall("shared") == [:])
        try await two.hset("shared", ["db": "2"])
        #expect(try await one.hgetall("shared") == ["db": Data("1".utf8)])
        #expect(try await two.hgetall("shared") == ["db": Data("2".utf8)])
        let outOfRange = RedisClient(configuration: server.configuration(database: 99))
        let error = await redisError { try await outOfRange.ping() }
        guard case .serverError(let message)? = error else {
            Issue.record("expected a server error, got \(String(describing: error))")
            return
        }
        #expect(message.contains("DB index"))
    }

    @Test func passwordAuthentication() async throws {
        let secret = "s3cret-pass-\(UUID().uuidString)"
        let server = try RedisServer(password: secret)
        let good = RedisClient(configuration: server.configuration())
        try await good.ping()

        var anonymous = server.configuration()
        anonymous.password = nil
        let missing = await redisError { try await RedisClient(configuration: anonymous).ping() }
        guard case .authenticationFailed? = missing else {
            Issue.record("expected an authentication failure, got \(String(describing: missing))")
            return
        }

        let wrong = await redisError { try await RedisClient(configuration: server.configuration(password: "nope-\(secret)")).ping() }
        guard case .authenticationFailed(let message)? = wrong else {
            Issue.record("expected an authentication failure, got \(String(describing: wrong))")
            return
        }
        #expect(message.contains("WRONGPASS") || message.contains("invalid"))
        #expect(!(wrong?.description.contains(secret) ?? true))
    }

    @Test func aclUserAuthentication() async throws {
        let server = try RedisServer(password: "admin-pass")
        let admin = RedisClient(configuration: server.configuration())
        try await admin.send(["ACL", "SETUSER", "visitors", "on", ">visitor-pass", "~app:*", "+@all"])
        let user = RedisClient(configuration: server.configuration(keyPrefix: "app:", username: "visitors",
                                                                   password: "visitor-pass"))
        try await user.hset("visitor:7", ["f": "v"])
        #expect(try await user.send(["ACL", "WHOAMI"]).stringValue == "visitors")
        #expect(try await admin.hgetall("app:visitor:7") == ["f": Data("v".utf8)])

        let wrong = await redisError {
            try await RedisClient(configuration: server.configuration(username: "visitors", password: "admin-pass")).ping()
        }
        guard case .authenticationFailed? = wrong else {
            Issue.record("expected an authentication failure, got \(String(describing: wrong))")
            return
        }
        #expect(!(wrong?.description.contains("admin-pass") ?? true))
    }

    @Test func aThousandCommandsInOnePipeline() async throws {
        let server = try RedisServer()
        let client = RedisClient(configuration: server.configuration(keyPrefix: "p:"))
        let commands = (0..<1_000).map { RedisCommand.hset("visitor:\($0 % 10)", ["f\($0)": Data("\($0)".utf8)]) }
        let results = try await client.pipeline(commands)
        #expect(results.count == 1_000)
        #expect(results.allSatisfy { (try? $0.get()) == .integer(1) })
        let reads = try await client.pipeline((0..<10).map { .hgetall("visitor:\($0)") })
        #expect(reads.compactMap { try? $0.get().arrayValue?.count } == Array(repeating: 200, count: 10))
    }

    @Test func aPipelineReportsEachCommandsError() async throws {
        let server = try RedisServer()
        let client = RedisClient(configuration: server.configuration())
        try await client.send(["SET", .key("plain"), "text"])
        let results = try await client.pipeline([.hset("h", ["f": Data("v".utf8)]), .hgetall("plain"), .ping])
        #expect((try? results[0].get()) == .integer(1))
        guard case .failure(.serverError(let message)) = results[1] else {
            Issue.record("expected WRONGTYPE, got \(results[1])")
            return
        }
        #expect(message.hasPrefix("WRONGTYPE"))
        #expect((try? results[2].get()) == .simpleString("PONG"))
    }

    @Test func aKeyHoldingANonHashIsAServerError() async throws {
        let server = try RedisServer()
        let client = RedisClient(configuration: server.configuration())
        try await client.send(["SET", .key("visitor:8"), "not a hash"])
        let error = await redisError { _ = try await client.hgetall("visitor:8") }
        guard case .serverError(let message)? = error else {
            Issue.record("expected a server error, got \(String(describing: error))")
            return
        }
        #expect(message.hasPrefix("WRONGTYPE"))
        #expect(error?.description.contains("WRONGTYPE") == true)
        // A server error leaves the connection sound: the next call succeeds on it.
        try await client.ping()
    }

    @Test func concurrentCallsShareABoundedPool() async throws {
        let server = try RedisServer()
        var configuration = server.configuration()
        configuration.poolSize = 3
        let client = RedisClient(configuration: configuration)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<60 {
                group.addTask { try await client.hset("visitor:\(task)", ["f": "\(task)"]) }
            }
            try await group.waitForAll()
        }
        #expect(try await client.send(["DBSIZE"]).intValue == 60)
        let list = try await client.send(["CLIENT", "LIST"]).stringValue ?? ""
        let connections = list.split(separator: "\n").count
        #expect((1...3).contains(connections), "\(connections) connections")
    }
}
