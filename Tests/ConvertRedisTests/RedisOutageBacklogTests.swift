import ConvertCore
import ConvertEnvironment
import ConvertMemory
import ConvertRedis
import ConvertSharedStore
import ConvertStorage
import ConvertSynchronization
import ConvertTesting
import Foundation
import Testing

/// New visitors decided while Redis is down, more of them than the local store holds: after a
/// kill and a restart on the same port, each is in Redis or counted and logged as not written;
/// a shutdown during the outage says how many visitors it did not write.
@Suite(.enabled(if: RedisServer.isAvailable, "redis-server is not installed (looked in PATH, /usr/bin, /usr/sbin)"),
       .serialized, .timeLimit(.minutes(10)))
struct RedisOutageBacklogTests {
    static let visitors = 1_200
    static let localCapacity = 200

    /// With the default bound on pending visitors every one is written; with 900, the 300 oldest
    /// changes are dropped, and exactly those are counted and logged.
    @Test(arguments: [nil, 900] as [Int?])
    func visitorsDecidedWhileRedisWasDownAreWrittenOrCountedAfterItsRestart(maximumPending: Int?) async throws {
        let server = try await RedisServer.started()
        let configuration = server.configuration(keyPrefix: "backlog:")
        let client = RedisClient(configuration: configuration)
        defer { client.close() }
        let logs = RecordingLogSink()
        let local = MemoryVisitorDataStore(capacity: Self.localCapacity)
        var options = WriteBehindVisitorStore.Options()
        if let maximumPending { options.maximumPendingVisitors = maximumPending }
        let store = WriteBehindVisitorStore(backend: RedisVisitorBackend(client: client), local: local, options: options,
                                            log: SDKLog(sink: logs, minimum: .info))
        #expect(await store.load(VisitorKey(namespace: "1-2", visitorId: "before")) == .notFound, "Redis answers before the kill")

        server.kill()
        let killed = ContinuousClock.now
        // New visitors on four request threads, each decided alone: its load fails, its claim is
        // not answered, its decision is stored locally; paced, so that the store's write retries
        // fail in between.
        let keys = (0..<Self.visitors).map { VisitorKey(namespace: "1-2", visitorId: "o\($0)") }
        let failedLoads = Locked(0)
        await withTaskGroup(of: Void.self) { group in
            for lane in 0..<4 {
                group.addTask {
                    for n in stride(from: lane, to: keys.count, by: 4) {
                        if case .failed = await store.load(keys[n]) { failedLoads.withValue { $0 += 1 } }
                        _ = store.claimFirstDecision(keys[n], experienceId: "e", variationId: "x\(n)")
                        store.update(keys[n]) { data in
                            data.bucketing["e"] = "x\(n)"
                            data.goals.insert("g")
                        }
                        if n % 16 < 4 { try? await Task.sleep(for: .milliseconds(2)) }
                    }
                }
            }
        }
        #expect(failedLoads.value == Self.visitors, "every visitor was decided during the outage")
        #expect(local.count <= Self.localCapacity, "the local store kept its bound: \(local.count)")

        try await Task.sleep(until: killed + .milliseconds(1_500))
        try await startAgain(server)
        // The pending count drops as a batch is taken, before its write lands: wait for both.
        try await eventually("Redis back and the pending writes drained", timeout: .seconds(15)) {
            logs.messages.contains { $0.contains("reachable again after") } && store.counters.pending == 0
                && store.writesInFlight == 0
        }

        // Read back through a client of the test's own.
        var checking = configuration
        checking.commandTimeout = .seconds(10)
        let checker = RedisClient(configuration: checking)
        defer { checker.close() }
        let backend = RedisVisitorBackend(client: checker)
        var missing = 0
        for (n, key) in keys.enumerated() {
            let stored = try await backend.load(key)
            if stored?.variationId(forExperienceId: "e") != "x\(n)" || stored?.goals.contains("g") != true { missing += 1 }
        }
        let counters = store.counters
        let recovery = logs.messages.filter { $0.contains("reachable again after") }
        print("RedisOutageBacklogTests (bound \(options.maximumPendingVisitors)): \(missing) of \(Self.visitors) not in Redis; "
            + "store \(counters); \(recovery)")
        #expect(missing == counters.droppedWrites, "every visitor missing is counted, and only those: \(missing) missing, \(counters)")
        #expect(recovery.count == 1, "\(logs.messages)")
        if let maximumPending {
            #expect(missing == Self.visitors - maximumPending, "past the bound the oldest were dropped: \(missing) missing")
            #expect(recovery.first?.contains("\(missing) visitor(s) changed during the outage not written") == true,
                    "the recovery line says how many were not written and why: \(recovery)")
        } else {
            #expect(missing == 0, "every visitor decided during the outage is in Redis: \(missing) missing")
            #expect(recovery.first?.contains("not written") == false, "\(recovery)")
        }
    }

    @Test func aShutdownWhileRedisIsDownSaysHowManyVisitorsItDidNotWrite() async throws {
        let server = try await RedisServer.started()
        let client = RedisClient(configuration: server.configuration(keyPrefix: "shutdown:"))
        defer { client.close() }
        let instance = try await ClaimingInstance(client, config: try Fixtures.data(.cdnConfigBaseline))
        #expect(await instance.request("before") != nil)
        server.kill()
        for n in 0..<40 { #expect(await instance.request("down-\(n)") != nil, "decided during the outage") }
        let pending = instance.store.counters.pending
        #expect(pending >= 40, "\(instance.store.counters)")

        _ = await instance.sdk.shutdown(timeout: .seconds(1))
        let lines = instance.logs.messages.filter { $0.contains("flushed with") }
        print("RedisOutageBacklogTests shutdown: \(lines)")
        #expect(lines.count == 1, "said once: \(instance.logs.messages)")
        // The count as the flush found it: a retry the outage's backoff begins afterwards takes
        // visitors from pending to in flight, so the counters read now may differ.
        let said = lines.first.flatMap { line in
            line.range(of: "flushed with ").flatMap { Int(line[$0.upperBound...].prefix { $0.isNumber }) }
        }
        #expect(said.map { (40...41).contains($0) } == true, "the 40 visitors decided during the outage (and the one before, unless written): \(lines)")
        #expect(lines.first?.contains("visitor(s)' changes not written to Redis at") == true
                && lines.first?.contains("unreachable") == true, "how many, where and why: \(lines)")
    }

    private func startAgain(_ server: RedisServer) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            Thread { continuation.resume(with: Result { try server.start() }) }.start()
        }
    }
}
