import ConvertEnvironment
import ConvertMemory
import ConvertRedis
import ConvertSharedStore
import ConvertStorage
import ConvertTesting
import Foundation
import Testing

/// Writes behind that the server answers with an error reply: one it refuses for now (out of
/// memory) stays pending and lands once the server takes writes again; one on a record of
/// another kind (`WRONGTYPE`) is left out, not retried forever.
@Suite(.enabled(if: RedisServer.isAvailable, "redis-server is not installed (looked in PATH, /usr/bin, /usr/sbin)"),
       .timeLimit(.minutes(5)))
struct RedisRefusedWriteTests {
    static let namespace = "1-2"

    static func keys(_ count: Int, _ prefix: String) -> [VisitorKey] {
        (0..<count).map { VisitorKey(namespace: namespace, visitorId: "\(prefix)\($0)") }
    }

    /// Every write (`HSET`, `HSETNX`) answered `-OOM …` from now on; reads and `PEXPIRE` still answer.
    static func refuseWrites(_ server: RedisServer) throws {
        _ = try server.command(["CONFIG", "SET", "maxmemory-policy", "noeviction"])
        _ = try server.command(["CONFIG", "SET", "maxmemory", "1"])
    }

    static func takeWrites(_ server: RedisServer) throws {
        _ = try server.command(["CONFIG", "SET", "maxmemory", "0"])
    }

    /// A field of a visitor's hash, read on a connection of the test's own.
    static func field(_ server: RedisServer, prefix: String, _ key: VisitorKey, _ field: String) throws -> String? {
        try server.command(["HGET", .key(prefix + RedisVisitorBackend.redisKey(key)), .string(field)]).stringValue
    }

    static func store(_ client: RedisClient, logs: RecordingLogSink) -> WriteBehindVisitorStore {
        // Retries close together, claims off: every decision reaches Redis through the writes behind.
        WriteBehindVisitorStore(backend: RedisVisitorBackend(client: client), local: MemoryVisitorDataStore(),
                                options: .init(writeBehind: .milliseconds(5), retryDelay: .milliseconds(20),
                                               maximumRetryDelay: .milliseconds(100), firstDecisionClaim: .never),
                                log: SDKLog(sink: logs, minimum: .info))
    }

    @Test func decisionsTheServerRefusesToStoreStayPendingAndLandOnceItTakesWritesAgain() async throws {
        let server = try await RedisServer.started()
        let prefix = "refused:"
        let client = RedisClient(configuration: server.configuration(keyPrefix: prefix))
        defer { client.close() }
        let logs = RecordingLogSink()
        let store = Self.store(client, logs: logs)
        try Self.refuseWrites(server)

        let keys = Self.keys(20, "v")
        for (n, key) in keys.enumerated() {
            store.update(key) { data in
                data.bucketing["e"] = "x\(n)"
                data.goals.insert("g")
            }
        }
        // The writer has tried (and, refused, retried) the batch, or took it for written.
        let settled = await eventually(timeout: .seconds(20)) { store.counters.saveFailures >= 2 || store.counters.saves > 0 }
        #expect(settled, "the writer tried: \(store.counters)")
        #expect(store.counters.saves == 0, "a write the server refused (OOM) is not written: \(store.counters)")
        #expect(store.counters.pending + store.writesInFlight == keys.count, "every visitor is still pending: \(store.counters)")
        #expect(try Self.field(server, prefix: prefix, keys[0], "d:e") == nil, "and Redis has nothing of it")
        #expect(logs.messages.contains { $0.contains("OOM") }, "the refusal is told: \(logs.messages)")

        try Self.takeWrites(server)
        let drained = await eventually(timeout: .seconds(20)) { store.counters.pending == 0 && store.writesInFlight == 0 }
        #expect(drained, "the pending writes went once the server took writes again: \(store.counters)")
        for (n, key) in keys.enumerated() {
            #expect(try Self.field(server, prefix: prefix, key, "d:e") == "x\(n)", "the decision of \(key.visitorId) is in Redis")
            #expect(try Self.field(server, prefix: prefix, key, "g:g") == "1", "and its goal")
        }
    }

    @Test func aMergeThrowsOnAWriteRefusedForNowAndLeavesOutOnlyARecordOfAnotherKind() async throws {
        let server = try await RedisServer.started()
        let prefix = "merge:"
        let client = RedisClient(configuration: server.configuration(keyPrefix: prefix))
        defer { client.close() }
        let backend = RedisVisitorBackend(client: client)
        let foreign = VisitorKey(namespace: Self.namespace, visitorId: "foreign")
        _ = try server.command(["SET", .key(prefix + RedisVisitorBackend.redisKey(foreign)), "not a hash"])
        let visitor = VisitorKey(namespace: Self.namespace, visitorId: "v")
        let decision = VisitorDataChanges(key: visitor, decisions: ["e": "x"], goals: ["g"])
        let goalOnly = VisitorDataChanges(key: visitor, goals: ["h"], locations: ["pricing"])

        try Self.refuseWrites(server)
        for batch in [[decision], [goalOnly], [VisitorDataChanges(key: foreign, decisions: ["e": "x"]), decision]] {
            let error = await redisError { _ = try await backend.merge(batch) }
            guard case .serverError(let message)? = error else {
                Issue.record("a merge the server refused must throw its error reply, threw \(String(describing: error)): \(batch)")
                continue
            }
            #expect(message.hasPrefix("OOM"), "\(message)")
        }

        try Self.takeWrites(server)
        let kept = try await backend.merge([VisitorDataChanges(key: foreign, decisions: ["e": "x"]), decision, goalOnly])
        #expect(kept == [[:], [:], [:]], "the record of another kind left out, the others written")
        #expect(try server.command(["TYPE", .key(prefix + RedisVisitorBackend.redisKey(foreign))]).stringValue == "string")
        #expect(try Self.field(server, prefix: prefix, visitor, "d:e") == "x")
        #expect(try Self.field(server, prefix: prefix, visitor, "g:g") == "1")
        #expect(try Self.field(server, prefix: prefix, visitor, "g:h") == "1")
    }

    @Test func aVisitorWhoseRecordHoldsAnotherKindOfValueIsNotRetriedForever() async throws {
        let server = try await RedisServer.started()
        let prefix = "wrongtype:"
        let client = RedisClient(configuration: server.configuration(keyPrefix: prefix))
        defer { client.close() }
        let logs = RecordingLogSink()
        let store = Self.store(client, logs: logs)
        let foreign = VisitorKey(namespace: Self.namespace, visitorId: "foreign")
        _ = try server.command(["SET", .key(prefix + RedisVisitorBackend.redisKey(foreign)), "not a hash"])
        let keys = [foreign] + Self.keys(5, "v")
        // One batch: the foreign record beside visitors that can be written.
        for (n, key) in keys.enumerated() {
            store.update(key) { $0.bucketing["e"] = "x\(n)" }
        }
        let drained = await eventually(timeout: .seconds(20)) { store.counters.pending == 0 && store.writesInFlight == 0 }
        #expect(drained, "\(store.counters)")
        try await Task.sleep(for: .milliseconds(300))
        let counters = store.counters
        #expect(counters.saveFailures == 0 && counters.pending == 0 && counters.outages == 0,
                "the batch was written once, the foreign record left out: \(counters)")
        for (n, key) in keys.enumerated().dropFirst() {
            #expect(try Self.field(server, prefix: prefix, key, "d:e") == "x\(n)", "the decision of \(key.visitorId) is in Redis")
        }
        #expect(try server.command(["GET", .key(prefix + RedisVisitorBackend.redisKey(foreign))]).stringValue == "not a hash",
                "the foreign value is untouched")
    }
}
