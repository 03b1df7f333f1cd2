import ConvertEnvironment
import ConvertMemory
import ConvertSharedStore
import ConvertStorage
import ConvertSynchronization
import ConvertTesting
import Foundation
import Testing

/// A visitor store that counts what the shared store asks of it beside reads and writes.
private final class CountingStore: VisitorDataStore, Sendable {
    let inner = MemoryVisitorDataStore(capacity: 1_000)
    private let calls = Locked((prepares: 0, flushes: 0))

    var prepares: Int { calls.value.prepares }
    var flushes: Int { calls.value.flushes }

    func data(for key: VisitorKey) -> VisitorData? { inner.data(for: key) }

    @discardableResult
    func update<Result>(_ key: VisitorKey, _ body: (inout VisitorData) -> Result) -> Result { inner.update(key, body) }

    func flush() async -> Int {
        calls.withValue { $0.flushes += 1 }
        return 0
    }

    func prepare() async {
        calls.withValue { $0.prepares += 1 }
    }
}

@Suite struct SharedStoreLocalCopyTests {
    @Test func anyVisitorStoreServesAsTheLocalCopy() async throws {
        try await VisitorDataStoreContract.verify { WriteBehindVisitorStore(backend: MemoryVisitorBackend(), local: CountingStore()) }

        let backend = MemoryVisitorBackend()
        let local = CountingStore()
        let store = WriteBehindVisitorStore(backend: backend, local: local)
        let key = VisitorKey(namespace: "1-2", visitorId: "v")
        store.update(key) { $0.bucketing["e1"] = "a" }
        #expect(local.data(for: key)?.bucketing == ["e1": "a"], "decisions are written into the given store")
        #expect(await store.flush() == 1)
        #expect(backend.record(key)?.bucketing == ["e1": "a"], "and written behind from it")
        #expect(local.flushes == 1, "a flush reaches the local store after the backend")
        await store.prepare()
        #expect(local.prepares == 1, "readiness waits for the local store's load")

        let other = VisitorKey(namespace: "1-2", visitorId: "w")
        _ = try await backend.save(other, VisitorData(bucketing: ["e2": "b"]))
        #expect(await store.load(other) == .loaded)
        #expect(local.data(for: other)?.bucketing == ["e2": "b"], "a load lands in the given store")
    }

    @Test func writeRetriesBackOffAndWarningsAreThrottledOnTheInjectedClock() async throws {
        let clock = ManualClock()
        let backend = MemoryVisitorBackend()
        backend.isAvailable = false
        let logs = RecordingLogSink()
        let store = WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore(),
                                       options: .init(writeBehind: .milliseconds(20), retryDelay: .seconds(1), maximumRetryDelay: .seconds(4)),
                                       log: SDKLog(sink: logs, minimum: .debug), clock: clock)
        let key = VisitorKey(namespace: "1-2", visitorId: "v")
        store.update(key) { $0.bucketing["e1"] = "a" }
        try await clock.waitForSleepers()
        #expect(clock.deadlines == [.milliseconds(20)], "the first write waits the write-behind delay")
        var expected = Duration.milliseconds(20)
        // 1 s, doubled per failure, capped at 4 s.
        for (failures, wait) in [(1, 1), (2, 2), (3, 4), (4, 4)] {
            clock.advance(to: expected)
            try await eventually("failed write \(failures)") { store.counters.saveFailures == failures }
            try await clock.waitForSleepers()
            expected += .seconds(wait)
            #expect(clock.deadlines == [expected], "after \(failures) failure(s) the retry waits \(wait) s")
        }
        let warnings = { logs.messages.filter { $0.contains("not written") }.count }
        #expect(warnings() == 1, "four failures within 10 s of the first make one line")
        clock.advance(to: expected)
        try await eventually("failed write 5") { store.counters.saveFailures == 5 }
        #expect(warnings() == 2, "a failure 10 s or more after the last line makes another")

        backend.isAvailable = true
        try await clock.waitForSleepers()
        clock.advance(to: try #require(clock.deadlines.first))
        try await eventually("the write caught up") { store.counters.saves == 1 }
        #expect(backend.record(key)?.bucketing == ["e1": "a"])
        #expect(store.counters.pending == 0)
    }
}
