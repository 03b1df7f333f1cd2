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

    /// Each of `keys` decided (experience `e`) and converted (goal `g`) in `store`, then waited for
    /// until the writer has tried the batch (refused, twice) or taken it for written.
    static func decideAndSettle(_ keys: [VisitorKey], in store: WriteBehindVisitorStore) async {
        for (n, key) in keys.enumerated() {
            store.update(key) { data in
                data.bucketing["e"] = "x\(n)"
                data.goals.insert("g")
            }
        }
        let settled = await eventually(timeout: .patience) { store.counters.saveFailures >= 2 || store.counters.saves > 0 }
        #expect(settled, "the writer tried: \(store.counters)")
    }

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
        // The writer has tried (and, refused, retried) the batch, or took it for written.
        await Self.decideAndSettle(keys, in: store)
        #expect(store.counters.saves == 0, "a write the server refused (OOM) is not written: \(store.counters)")
        #expect(store.counters.pending + store.writesInFlight == keys.count, "every visitor is still pending: \(store.counters)")
        #expect(try Self.field(server, prefix: prefix, keys[0], "d:e") == nil, "and Redis has nothing of it")
        #expect(logs.messages.contains { $0.contains("OOM") }, "the refusal is told: \(logs.messages)")

        try Self.takeWrites(server)
        let drained = await eventually(timeout: .patience) { store.counters.pending == 0 && store.writesInFlight == 0 }
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
        let drained = await eventually(timeout: .patience) { store.counters.pending == 0 && store.writesInFlight == 0 }
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

/// The same over a cluster: a slot a master does not serve for now is one part's failure (no
/// outage of the whole store), a master out of memory an ordinary one; either way the writes
/// stay pending and land once the cluster takes them.
@Suite(.enabled(if: RedisCluster.isAvailable, "redis-server or redis-cli is not installed"), .timeLimit(.minutes(5)))
struct RedisClusterRefusedWriteTests {
    @Test func writesToASlotNotServedOrAMasterOutOfMemoryStayPendingAndLandOnceTaken() async throws {
        let cluster = try await RedisCluster.started()
        let prefix = "refused:"
        let client = RedisClusterClient(seeds: cluster.seeds(keyPrefix: prefix))
        defer { client.close() }
        #expect(await eventually { client.topologyRefreshes > 0 }, "the topology read at start")
        let backend = RedisVisitorBackend(cluster: client)
        let logs = RecordingLogSink()
        let store = WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore(),
                                            options: .init(writeBehind: .milliseconds(5), retryDelay: .milliseconds(20),
                                                           maximumRetryDelay: .milliseconds(100), firstDecisionClaim: .never),
                                            log: SDKLog(sink: logs, minimum: .info))
        let keys = RedisRefusedWriteTests.keys(30, "c")
        let slot = RedisClusterClient.slot(of: prefix + RedisVisitorBackend.redisKey(keys[0]))
        let nodes = try cluster.nodes()
        let owner = try #require(nodes.first { $0.isMaster && $0.slots.contains { $0.contains(slot) } })
        let other = try #require(nodes.first { $0.isMaster && !$0.failed && $0.id != owner.id })
        let ownerServer = try #require(cluster.server(port: owner.port))

        // The first visitor's slot "migrating" to a master that does not import it: its owner
        // answers ASK, the other master MOVED back.
        _ = try ownerServer.command(["CLUSTER", "SETSLOT", .string("\(slot)"), "MIGRATING", .string(other.id)])
        // The backend's own answer: the slot's refusal, as one part's failure. (A call that met
        // a stalled machine instead, every master timing out, says nothing about it: again.)
        let probe = [VisitorDataChanges(key: keys[0], decisions: ["probe": "p"])]
        var classified: (any Error)?
        for _ in 0..<20 {
            do {
                _ = try await backend.merge(probe)
            } catch let part as RedisVisitorBackend.ClusterPartUnavailable {
                classified = part
                // A stall's timeout at one master is that part's failure too: again.
                if case .timeout = part.error { continue }
                if case .connectionFailed = part.error { continue }
                break
            } catch let error as RedisError {
                classified = error
                if case .timeout = error { continue }
                if case .connectionFailed = error { continue }
                break
            }
        }
        let part = try #require(classified as? RedisVisitorBackend.ClusterPartUnavailable,
                                "a slot not served is one part's failure: \(String(describing: classified))")
        #expect(part.description.contains("slot is not served"), "\(part)")

        await RedisRefusedWriteTests.decideAndSettle(keys, in: store)
        #expect(store.counters.saves == 0 && store.counters.pending + store.writesInFlight == keys.count,
                "a write to a slot not served is not written: \(store.counters)")
        #expect(store.counters.partFailures >= 1, "\(store.counters)")
        // No outage of the whole store for it: an outage here can only be the machine's stall
        // (every master timing out at once), logged with that cause.
        let outages = logs.messages.filter { $0.contains("unreachable (") }
        #expect(store.counters.outages == 0 || (!outages.isEmpty && !outages.contains { $0.contains("MOVED") || $0.contains("ASK") }),
                "one slot is a part of the cluster, not the whole: \(store.counters); \(logs.messages)")
        // The part's failure is logged once per 10 s with its first cause: the slot, unless a
        // stalled machine's timeout came first (the backend's own verdict is checked above).
        let partLines = logs.messages.filter { $0.contains("cannot be reached while the others answer") || $0.contains("slot is not served") }
        #expect(partLines.contains { $0.contains("slot is not served") } || partLines.first?.contains("Redis timeout") == true,
                "\(logs.messages)")
        _ = try ownerServer.command(["CLUSTER", "SETSLOT", .string("\(slot)"), "STABLE"])
        #expect(await eventually(timeout: .patience) { store.counters.pending == 0 && store.writesInFlight == 0 },
                "written once the slot is served: \(store.counters)")

        // One master out of memory: its error reply fails the batch, not as a part's.
        try RedisRefusedWriteTests.refuseWrites(ownerServer)
        let late = keys.map { VisitorDataChanges(key: $0, decisions: ["late": "y"]) }
        await #expect(throws: RedisError.self) { _ = try await backend.merge(late) }
        try RedisRefusedWriteTests.takeWrites(ownerServer)
        #expect(try await backend.merge(late) == Array(repeating: [:], count: keys.count))

        for (n, key) in keys.enumerated() {
            let slot = RedisClusterClient.slot(of: prefix + RedisVisitorBackend.redisKey(key))
            let master = try #require(try cluster.master(of: slot).flatMap { cluster.server(port: $0.port) })
            #expect(try RedisRefusedWriteTests.field(master, prefix: prefix, key, "d:e") == "x\(n)", "\(key.visitorId)")
            #expect(try RedisRefusedWriteTests.field(master, prefix: prefix, key, "g:g") == "1", "\(key.visitorId)")
            #expect(try RedisRefusedWriteTests.field(master, prefix: prefix, key, "d:late") == "y", "\(key.visitorId)")
        }
    }
}
