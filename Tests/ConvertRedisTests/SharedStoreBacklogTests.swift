import ConvertEnvironment
import ConvertMemory
import ConvertSharedStore
import ConvertStorage
import ConvertTesting
import Foundation
import Testing

/// What the shared store keeps of the changes made while its backend is down: more visitors than
/// its local store holds, a bound on what is kept, and what a flush leaves unwritten (on an
/// in-memory backend: exact, no network).
@Suite(.timeLimit(.minutes(10))) struct SharedStoreBacklogTests {
    /// `count` new visitors decided while the backend is down, as the SDK decides them (a load
    /// that fails, a claim not answered, the decision stored locally), visitor `n` in variation
    /// `x<n>` of experience `e`.
    static func decideDuringOutage(_ store: WriteBehindVisitorStore, _ keys: [VisitorKey]) async {
        for (n, key) in keys.enumerated() {
            guard case .failed = await store.load(key) else {
                Issue.record("the load of \(key.visitorId) did not fail during the outage")
                return
            }
            #expect(store.claimFirstDecision(key, experienceId: "e", variationId: "x\(n)") == nil)
            store.update(key) { data in
                data.bucketing["e"] = "x\(n)"
                data.goals.insert("g")
            }
        }
    }

    /// Waits until nothing is pending or on its way to the backend (the counter of pending
    /// visitors drops as a batch is taken, before its write lands), looking twice.
    static func drained(_ store: WriteBehindVisitorStore) async throws {
        for _ in 0..<2 {
            try await eventually("the pending writes drained") { store.counters.pending == 0 && store.writesInFlight == 0 }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    static func keys(_ count: Int, _ prefix: String = "v") -> [VisitorKey] {
        (0..<count).map { VisitorKey(namespace: "1-2", visitorId: "\(prefix)\($0)") }
    }

    /// The visitors (by index) whose decision is not in the backend.
    static func missing(_ backend: MemoryVisitorBackend, _ keys: [VisitorKey]) -> [Int] {
        keys.indices.filter { backend.record(keys[$0])?.variationId(forExperienceId: "e") != "x\($0)" }
    }

    @Test func everyVisitorDecidedDuringAnOutageIsWrittenThoughTheLocalStoreEvictedIt() async throws {
        let backend = MemoryVisitorBackend()
        let local = MemoryVisitorDataStore(capacity: 50)
        let logs = RecordingLogSink()
        // The writer never wakes on this clock: what reaches the backend is the recovery's drain.
        let store = WriteBehindVisitorStore(backend: backend, local: local, log: SDKLog(sink: logs, minimum: .info),
                                            clock: ManualClock())
        backend.isAvailable = false
        let keys = Self.keys(500)
        await Self.decideDuringOutage(store, keys)
        #expect(local.count <= 50, "the local store kept its bound: \(local.count)")
        #expect(store.counters.pending == 500, "\(store.counters)")

        backend.isAvailable = true
        try await Self.drained(store)
        let missing = Self.missing(backend, keys)
        #expect(missing.isEmpty, "\(missing.count) of 500 visitors decided during the outage are not in the backend, e.g. \(missing.prefix(5))")
        #expect(keys.allSatisfy { backend.record($0)?.goals.contains("g") == true }, "their goals too")
        #expect(store.counters.saves == 500 && store.counters.droppedWrites == 0, "\(store.counters)")
        let recovery = logs.messages.filter { $0.contains("reachable again after") }
        #expect(recovery.count == 1 && recovery[0].contains("writing the 500 visitor(s) pending"), "\(recovery)")
        #expect(!recovery[0].contains("not written"), "nothing was lost: \(recovery)")
    }

    @Test func aVisitorEvictedDuringTheOutageGetsItsDecisionBackWhenItReturns() async throws {
        let backend = MemoryVisitorBackend()
        let local = MemoryVisitorDataStore(capacity: 10)
        let store = WriteBehindVisitorStore(backend: backend, local: local, clock: ManualClock())
        backend.isAvailable = false
        let keys = Self.keys(30)
        await Self.decideDuringOutage(store, keys)
        #expect(local.data(for: keys[0]) == nil, "the first visitor was evicted locally")
        // It comes back during the outage: its load fails, and what it was decided is what it gets.
        guard case .failed = await store.load(keys[0]) else {
            Issue.record("the load did not fail during the outage")
            return
        }
        #expect(store.data(for: keys[0])?.variationId(forExperienceId: "e") == "x0", "\(String(describing: store.data(for: keys[0])))")
        backend.isAvailable = true
        try await Self.drained(store)
        #expect(Self.missing(backend, keys).isEmpty)
    }

    @Test func pastTheBoundTheOldestChangesAreDroppedCountedAndLoggedAtRecovery() async throws {
        let backend = MemoryVisitorBackend()
        let logs = RecordingLogSink()
        let store = WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore(capacity: 50),
                                            options: .init(maximumPendingVisitors: 100),
                                            log: SDKLog(sink: logs, minimum: .info), clock: ManualClock())
        backend.isAvailable = false
        let keys = Self.keys(300)
        await Self.decideDuringOutage(store, keys)
        #expect(store.counters.pending == 100 && store.counters.droppedWrites == 200, "\(store.counters)")

        backend.isAvailable = true
        try await Self.drained(store)
        let missing = Self.missing(backend, keys)
        #expect(missing == Array(0..<200), "the 200 oldest are not written, the 100 newest are: \(missing.count) missing")
        #expect(store.counters.droppedWrites == missing.count, "\(store.counters)")
        let recovery = logs.messages.filter { $0.contains("reachable again after") }
        #expect(recovery.count == 1, "\(logs.messages)")
        #expect(recovery.first?.contains("writing the 100 visitor(s) pending") == true, "\(recovery)")
        #expect(recovery.first?.contains("200 visitor(s) changed during the outage not written") == true
                && recovery.first?.contains("maximumPendingVisitors (100)") == true, "the loss and its cause: \(recovery)")

        // A second outage reports its own losses only.
        backend.isAvailable = false
        await Self.decideDuringOutage(store, Self.keys(120, "w"))
        backend.isAvailable = true
        try await Self.drained(store)
        let second = logs.messages.filter { $0.contains("reachable again after") }.last
        #expect(second?.contains("20 visitor(s) changed during the outage not written") == true, "\(String(describing: second))")
        #expect(store.counters.droppedWrites == 220)
    }

    @Test func aFlushWhileTheBackendIsDownSaysHowManyVisitorsItDidNotWrite() async throws {
        let backend = MemoryVisitorBackend()
        let logs = RecordingLogSink()
        let store = WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore(capacity: 50),
                                            log: SDKLog(sink: logs, minimum: .info), clock: ManualClock())
        backend.isAvailable = false
        await Self.decideDuringOutage(store, Self.keys(80))
        #expect(await store.flush() == 0)
        let lines = logs.messages.filter { $0.contains("flushed with") }
        #expect(lines.count == 1, "one line: \(logs.messages)")
        #expect(lines.first?.contains("80 visitor(s)' changes not written") == true && lines.first?.contains("unreachable") == true,
                "how many and why: \(lines)")
        #expect(store.counters.pending == 80, "they stay pending: \(store.counters)")

        backend.isAvailable = true
        try await Self.drained(store)
        #expect(await store.flush() == 0)
        #expect(logs.messages.filter { $0.contains("flushed with") }.count == 1, "a flush that left nothing says nothing")
    }
}
