import ConvertEnvironment
import ConvertJSON
import ConvertMemory
import ConvertSharedStore
import ConvertStorage
import ConvertSynchronization
import ConvertTesting
import Foundation
import Testing

/// A memory backend that records what the shared store asks of it.
private final class SpyBackend: VisitorDataBackend, Sendable {
    let inner = MemoryVisitorBackend()
    private let state = Locked((claims: 0, merges: [[VisitorDataChanges]]()))

    var claims: Int { state.value.claims }
    var merges: [[VisitorDataChanges]] { state.value.merges }

    func load(_ key: VisitorKey) async throws -> VisitorData? { try await inner.load(key) }
    func save(_ key: VisitorKey, _ data: VisitorData) async throws -> VisitorData { try await inner.save(key, data) }
    func recordGoalOnce(_ key: VisitorKey, goalId: String) async throws -> Bool { try await inner.recordGoalOnce(key, goalId: goalId) }
    func claimVariation(_ key: VisitorKey, experienceId: String, variationId: String) throws -> VariationClaim {
        state.withValue { $0.claims += 1 }
        return try inner.claimVariation(key, experienceId: experienceId, variationId: variationId)
    }
    func merge(_ changes: [VisitorDataChanges]) async throws -> [[String: String]] {
        state.withValue { $0.merges.append(changes) }
        return try await inner.merge(changes)
    }
    func subscribe(_ handler: @escaping @Sendable (VisitorDataBackendEvent) -> Void) { inner.subscribe(handler) }
}

/// A memory backend whose loads can fail, whose next merge, once armed, waits until released and
/// then fails (a write on its way while something else happens), and that says it is back when
/// told: a cluster whose calls reached a healthy master (ending the store's outage) before its
/// topology announced the promoted replica, while a write to the dead master was on its way.
private final class HeldBackend: VisitorDataBackend, Sendable {
    struct Down: Error, CustomStringConvertible {
        var description: String { "connection refused" }
    }
    let inner = MemoryVisitorBackend()
    private let state = Locked((loadsFail: false, armed: false, entered: false,
                                release: CheckedContinuation<Void, Never>?.none,
                                subscribers: [@Sendable (VisitorDataBackendEvent) -> Void]()))

    var loadsFail: Bool {
        get { state.value.loadsFail }
        set { state.withValue { $0.loadsFail = newValue } }
    }
    func holdNextMerge() { state.withValue { $0.armed = true } }
    var mergeHeld: Bool { state.value.entered && state.value.release != nil }
    func release() { state.withValue { state in state.release?.resume(); state.release = nil } }

    /// Tells the subscribers the backend is back, as the cluster backend does.
    func announceReturn() {
        for subscriber in state.value.subscribers { subscriber(.available(downFor: .seconds(1))) }
    }

    func load(_ key: VisitorKey) async throws -> VisitorData? {
        if loadsFail { throw Down() }
        return try await inner.load(key)
    }
    func save(_ key: VisitorKey, _ data: VisitorData) async throws -> VisitorData { try await inner.save(key, data) }
    func recordGoalOnce(_ key: VisitorKey, goalId: String) async throws -> Bool { try await inner.recordGoalOnce(key, goalId: goalId) }
    func claimVariation(_ key: VisitorKey, experienceId: String, variationId: String) throws -> VariationClaim {
        try inner.claimVariation(key, experienceId: experienceId, variationId: variationId)
    }
    func merge(_ changes: [VisitorDataChanges]) async throws -> [[String: String]] {
        let held = state.withValue { state -> Bool in
            defer { state.armed = false }
            return state.armed
        }
        guard held else { return try await inner.merge(changes) }
        await withCheckedContinuation { continuation in
            state.withValue { $0.entered = true; $0.release = continuation }
        }
        throw Down()
    }
    func subscribe(_ handler: @escaping @Sendable (VisitorDataBackendEvent) -> Void) {
        state.withValue { $0.subscribers.append(handler) }
        inner.subscribe(handler)
    }
}

/// A memory backend one part of which is down: its writes fail with a part's error (claims
/// and loads answer) until it recovers and says so, as a cluster whose master awaits its
/// replica's promotion.
private final class PartlyDownBackend: VisitorDataBackend, Sendable {
    struct PartDown: VisitorBackendPartError, CustomStringConvertible {
        var description: String { "one part is down" }
    }
    let inner = MemoryVisitorBackend()
    private let state = Locked((down: true, failedMerges: 0, subscribers: [@Sendable (VisitorDataBackendEvent) -> Void]()))

    var failedMerges: Int { state.value.failedMerges }

    /// The part is back: says so to the subscribers, as the cluster backend does.
    func recover() {
        let subscribers = state.withValue { state in
            state.down = false
            return state.subscribers
        }
        for subscriber in subscribers { subscriber(.available(downFor: .seconds(1))) }
    }

    func load(_ key: VisitorKey) async throws -> VisitorData? { try await inner.load(key) }
    func save(_ key: VisitorKey, _ data: VisitorData) async throws -> VisitorData { try await inner.save(key, data) }
    func recordGoalOnce(_ key: VisitorKey, goalId: String) async throws -> Bool { try await inner.recordGoalOnce(key, goalId: goalId) }
    func claimVariation(_ key: VisitorKey, experienceId: String, variationId: String) throws -> VariationClaim {
        try inner.claimVariation(key, experienceId: experienceId, variationId: variationId)
    }
    func merge(_ changes: [VisitorDataChanges]) async throws -> [[String: String]] {
        let down = state.withValue { state -> Bool in
            if state.down { state.failedMerges += 1 }
            return state.down
        }
        if down { throw PartDown() }
        return try await inner.merge(changes)
    }
    func subscribe(_ handler: @escaping @Sendable (VisitorDataBackendEvent) -> Void) {
        state.withValue { $0.subscribers.append(handler) }
    }
}

/// The shared store's side of an outage, on an in-memory backend (exact, no network).
@Suite(.timeLimit(.minutes(1))) struct SharedStoreOutageTests {
    private let key = VisitorKey(namespace: "1-2", visitorId: "v")

    @Test func duringAnOutageClaimsLoadsAndGoalRecordsAnswerAtOnceWithoutTheBackend() async throws {
        let backend = SpyBackend()
        let store = WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore(),
                                            options: .init(retryDelay: .seconds(60)))
        #expect(store.claimFirstDecision(key, experienceId: "e", variationId: "a")?.variationId == "a")
        backend.inner.isAvailable = false
        let calls = backend.inner.calls
        let started = ContinuousClock.now
        for _ in 0..<100 {
            #expect(store.claimFirstDecision(key, experienceId: "e2", variationId: "b")?.variationId == nil, "the local decision stands")
            guard case .failed(let reason) = await store.load(key) else {
                Issue.record("a load during the outage fails")
                return
            }
            #expect(reason.contains("unreachable since"), "\(reason)")
            #expect(await store.recordGoalOnce(key, goalId: "g") == nil)
        }
        #expect(backend.inner.calls == calls, "no call reached the backend during the outage")
        #expect(ContinuousClock.now - started < .seconds(1))
        #expect(store.counters.claimFailures == 100 && store.counters.outages == 1, "\(store.counters)")

        backend.inner.isAvailable = true
        #expect(store.claimFirstDecision(key, experienceId: "e2", variationId: "b")?.variationId == "b", "the backend is called again once it is back")
    }

    @Test func aFailedCallStartsTheOutageForBackendsThatCannotTell() async throws {
        /// A backend whose every call fails, saying nothing of its availability.
        struct Failing: VisitorDataBackend {
            struct Down: Error {}
            let calls = Locked(0)
            func load(_ key: VisitorKey) async throws -> VisitorData? { calls.withValue { $0 += 1 }; throw Down() }
            func save(_ key: VisitorKey, _ data: VisitorData) async throws -> VisitorData { calls.withValue { $0 += 1 }; throw Down() }
            func recordGoalOnce(_ key: VisitorKey, goalId: String) async throws -> Bool { calls.withValue { $0 += 1 }; throw Down() }
            func claimVariation(_ key: VisitorKey, experienceId: String, variationId: String) throws -> VariationClaim {
                calls.withValue { $0 += 1 }
                throw Down()
            }
        }
        let backend = Failing()
        let clock = ManualClock()
        let store = WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore(),
                                            options: .init(retryDelay: .seconds(1), maximumRetryDelay: .seconds(4)), clock: clock)
        #expect(store.claimFirstDecision(key, experienceId: "e", variationId: "a")?.variationId == nil)
        #expect(store.claimFirstDecision(key, experienceId: "e", variationId: "a")?.variationId == nil)
        #expect(backend.calls.value == 1, "the second claim did not wait for the backend")
        clock.advance(by: .seconds(1))
        #expect(store.claimFirstDecision(key, experienceId: "e", variationId: "a")?.variationId == nil)
        #expect(backend.calls.value == 2, "after the retry delay the backend is tried again")
        clock.advance(by: .seconds(1))
        #expect(store.claimFirstDecision(key, experienceId: "e", variationId: "a")?.variationId == nil)
        #expect(backend.calls.value == 2, "the window doubled after the second failure")
    }

    @Test func theOutageIsLoggedOnceAndItsEndWithItsLength() async throws {
        let backend = MemoryVisitorBackend()
        let logs = RecordingLogSink()
        let store = WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore())
        store.adoptLog(SDKLog(sink: logs, minimum: .info))
        store.update(key) { $0.bucketing["e"] = "a" }
        backend.isAvailable = false
        for _ in 0..<20 {
            _ = await store.load(key)
            _ = store.claimFirstDecision(key, experienceId: "e", variationId: "a")?.variationId
        }
        store.update(VisitorKey(namespace: "1-2", visitorId: "w")) { $0.bucketing["e"] = "b" }
        backend.isAvailable = true
        #expect(await eventually { store.counters.pending == 0 }, "pending writes drained once the backend is back")
        _ = await store.flush()
        let outage = logs.messages.filter { $0.contains("unreachable (") }
        let end = logs.messages.filter { $0.contains("reachable again after") }
        #expect(outage.count == 1 && outage[0].contains("the memory backend"), "\(logs.messages)")
        #expect(end.count == 1, "\(logs.messages)")
        #expect(backend.record(VisitorKey(namespace: "1-2", visitorId: "w"))?.bucketing == ["e": "b"])
    }

    @Test func aStoreLogsThroughTheLogItIsHandedUnlessGivenOne() async throws {
        let backend = MemoryVisitorBackend()
        let handed = RecordingLogSink(), own = RecordingLogSink()
        let adopting = WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore())
        let keeping = WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore(), log: SDKLog(sink: own, minimum: .info))
        adopting.adoptLog(SDKLog(sink: handed, minimum: .info))
        keeping.adoptLog(SDKLog(sink: handed, minimum: .info))
        backend.isAvailable = false
        _ = await adopting.load(key)
        _ = await keeping.load(key)
        #expect(handed.messages.filter { $0.contains("unreachable (") }.count == 1, "the adopting store's line: \(handed.messages)")
        #expect(own.messages.filter { $0.contains("unreachable (") }.count == 1, "the other kept its own log: \(own.messages)")
    }

    @Test func aBackendThatLostItsDataGetsTheVisitorsSeenLastWrittenAgain() async throws {
        let backend = MemoryVisitorBackend()
        let store = WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore(capacity: 1_000),
                                            options: .init(rewrittenAfterDataLoss: 30))
        let keys = (0..<50).map { VisitorKey(namespace: "1-2", visitorId: "v\($0)") }
        for (n, key) in keys.enumerated() {
            #expect(store.claimFirstDecision(key, experienceId: "e", variationId: "x\(n)")?.variationId == "x\(n)")
            store.update(key) { $0.bucketing["e"] = "x\(n)"; $0.locations = ["home"] }
        }
        _ = await store.flush()
        backend.loseData()
        #expect(await eventually { store.counters.rewrittenAfterDataLoss == 30 })
        // Past the marks: the writes on their way too.
        _ = await store.flush()
        let rewritten = keys.filter { backend.record($0) != nil }
        #expect(rewritten == Array(keys.suffix(30)), "the 30 seen last, whole: \(rewritten.count)")
        #expect(backend.record(keys[49])?.bucketing == ["e": "x49"] && backend.record(keys[49])?.locations == ["home"])
    }

    @Test func aWriteThatFailsAfterTheBackendLostItsDataIsSentAgainWhole() async throws {
        let backend = HeldBackend()
        let store = WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore(),
                                            options: .init(writeBehind: .seconds(600)))
        // Claimed in the backend, then a change pending over it (the claimed decision is its base).
        #expect(store.claimFirstDecision(key, experienceId: "e", variationId: "a")?.variationId == "a")
        store.update(key) { $0.bucketing["e"] = "a"; $0.locations = ["home"] }
        // Its write is on the way when the backend restarts empty, and fails after the rewrite.
        backend.holdNextMerge()
        async let first = store.flush()
        try await eventually("the write is held") { backend.mergeHeld }
        backend.inner.loseData()
        try await eventually("the visitor is marked for writing again") { store.counters.rewrittenAfterDataLoss == 1 }
        backend.release()
        _ = await first
        _ = await store.flush()
        let stored = backend.inner.record(key)
        #expect(stored?.bucketing == ["e": "a"], "the claimed decision is written to the emptied backend: \(String(describing: stored))")
        #expect(backend.inner.record(key)?.locations == ["home"])
    }

    @Test func aVisitorPendingWhenTheBackendLostItsDataIsWrittenWholeThoughNotRewrittenAsRecent() async throws {
        let backend = MemoryVisitorBackend()
        let store = WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore(),
                                            options: .init(writeBehind: .seconds(600), rewrittenAfterDataLoss: 0))
        #expect(store.claimFirstDecision(key, experienceId: "e", variationId: "a")?.variationId == "a")
        store.update(key) { $0.bucketing["e"] = "a"; $0.locations = ["home"] }
        // Lost while the change waits; no visitor is marked again as seen last (the bound is 0).
        backend.loseData()
        _ = await store.flush()
        let stored = backend.record(key)
        #expect(stored?.bucketing == ["e": "a"], "the claimed decision is written to the emptied backend: \(String(describing: stored))")
        #expect(stored?.locations == ["home"])
    }

    @Test func writesBehindSendOnlyWhatChangedSinceWhatTheBackendHolds() async throws {
        let backend = SpyBackend()
        let store = WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore(), options: .init(writeBehind: .seconds(600)))
        // A new visitor: segments stored, its first decision claimed, then written locally.
        store.update(key) { $0.segmentValues = ["country": "DE"] }
        #expect(store.claimFirstDecision(key, experienceId: "e", variationId: "a")?.variationId == "a")
        store.update(key) { $0.bucketing["e"] = "a"; $0.locations = ["home"] }
        _ = await store.flush()
        #expect(backend.merges.last == [VisitorDataChanges(key: key, locations: ["home"], segmentValues: ["country": "DE"],
                                                          renewsExpiry: false)],
                "the claimed decision is not sent again, nor the renewal: \(backend.merges)")
        // A goal recorded, then a location change.
        store.update(key) { $0.goals.insert("g") }
        #expect(await store.recordGoalOnce(key, goalId: "g") == true)
        let merges = backend.merges.count
        _ = await store.flush()
        #expect(backend.merges.count == merges, "the recorded goal is not written again: \(String(describing: backend.merges.last))")
        store.update(key) { $0.locations = [] }
        _ = await store.flush()
        #expect(backend.merges.last == [VisitorDataChanges(key: key, locations: [])], "\(String(describing: backend.merges.last))")
        #expect(backend.inner.record(key)?.bucketing == ["e": "a"])
    }

    @Test func aWriteThatFailedIsSentAgainWithEverythingSinceTheLastOneThatLanded() async throws {
        let backend = SpyBackend()
        let store = WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore(), options: .init(writeBehind: .seconds(600)))
        store.update(key) { $0.bucketing["e"] = "a" }
        backend.inner.isAvailable = false
        _ = await store.flush()
        store.update(key) { $0.goals.insert("g") }
        backend.inner.isAvailable = true
        _ = await store.flush()
        #expect(backend.inner.record(key)?.bucketing == ["e": "a"] && backend.inner.record(key)?.goals == ["g"],
                "the failed write's decision came with the later goal")
    }

    /// A part of the backend down is no outage: claims still go to the backend; and when the
    /// backend says the part is back, what waits is written at once, not after the writer's
    /// backoff (a minute here).
    @Test func aPartDownStartsNoOutageAndItsReturnWritesWhatWaitsAtOnce() async throws {
        let backend = PartlyDownBackend()
        let store = WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore(),
                                            options: .init(retryDelay: .seconds(60), maximumRetryDelay: .seconds(60)))
        store.update(key) { $0 = VisitorData(bucketing: [:], goals: ["g"]) }
        #expect(await eventually { backend.failedMerges >= 1 }, "the write behind failed on the part that is down")
        #expect(store.claimFirstDecision(VisitorKey(namespace: "1-2", visitorId: "other"), experienceId: "e", variationId: "a")?
            .variationId == "a", "claims still reach the backend")
        #expect(store.counters.outages == 0)
        #expect(store.counters.claims == 1)
        let partFailures = store.counters.partFailures
        #expect(partFailures >= 1 && partFailures <= backend.failedMerges, "each failed write counted: \(store.counters)")
        backend.recover()
        #expect(await eventually(timeout: .seconds(5)) { backend.inner.record(key) != nil },
                "the pending write landed when the part came back, not a minute later")
    }

    /// The writer's own write on its way when the backend says it is back (a cluster's map moved
    /// to a promoted replica after the write was routed to the dead master), failing after: it
    /// failed on what was, so it goes again at the writer's next turn, not after its backoff (an
    /// hour here, beyond the test's patience).
    @Test func theWritersWriteBegunBeforeTheBackendsReturnThatFailsAfterItIsWrittenAgainAtOnce() async throws {
        let backend = HeldBackend()
        let store = WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore(),
                                            options: .init(writeBehind: .milliseconds(10), retryDelay: .seconds(3_600),
                                                           maximumRetryDelay: .seconds(3_600)))
        backend.holdNextMerge()
        store.update(key) { $0.bucketing["e"] = "a" }
        try await eventually("the writer's write is on its way") { backend.mergeHeld }
        backend.announceReturn()
        backend.release()
        #expect(await eventually(timeout: .patience) { backend.inner.record(key)?.bucketing == ["e": "a"] },
                "the write that failed after the return waited out the writer's backoff: \(store.counters)")
        #expect(store.counters.outages == 0, "\(store.counters)")
    }

    /// An outage ended by a call that answered before the backend said it was back; a write
    /// begun then fails only after the backend's return: that is no new outage, and what waits
    /// is written at once, not at the writer's next turn (ten minutes here).
    @Test func aWriteBegunBeforeTheBackendsReturnThatFailsAfterItStartsNoOutageAndIsWrittenAgainAtOnce() async throws {
        let backend = HeldBackend()
        let store = WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore(),
                                            options: .init(writeBehind: .seconds(600), retryDelay: .milliseconds(50)))
        let other = VisitorKey(namespace: "1-2", visitorId: "other")
        store.update(key) { $0.bucketing["e"] = "a" }
        backend.loadsFail = true
        _ = await store.load(other)
        #expect(store.counters.outages == 1)
        backend.loadsFail = false
        backend.holdNextMerge()
        // Past the fail-fast window, a load answers: the outage ends and what waits is drained.
        try await eventually("a load answered after the window") {
            if case .failed = await store.load(other) { return false }
            return true
        }
        try await eventually("the drain's write is on its way") { backend.mergeHeld }
        backend.announceReturn()
        backend.release()
        #expect(await eventually(timeout: .seconds(5)) { backend.inner.record(key)?.bucketing == ["e": "a"] },
                "the write that failed after the return was sent again at once: \(store.counters)")
        #expect(store.counters.outages == 1, "a failure of a write begun before the return started an outage: \(store.counters)")
    }
}
