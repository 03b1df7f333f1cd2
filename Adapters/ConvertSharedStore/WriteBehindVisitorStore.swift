import ConvertEnvironment
import ConvertStorage
import ConvertSynchronization
import ConvertVisitor
import Foundation

/// Visitor data shared by several SDK instances through a ``VisitorDataBackend`` (Redis):
/// decisions read and write a local store (any ``VisitorDataStore``, typically a memory store),
/// a visitor is loaded from the backend into it before a request is decided, and its changes
/// are written behind to the backend in batches.
///
/// ```swift
/// let store = WriteBehindVisitorStore(backend: RedisVisitorBackend(client: redis), local: MemoryVisitorDataStore())
/// let sdk = ConvertSwiftSDK(configuration: configuration, ports: ConvertPorts(
///     configSource: …, visitorStore: store, visitorIdStore: MemoryVisitorIdStore(), trackingSink: …))
/// let context = await sdk.loadContext(visitorId: id)   // load, then decide synchronously
/// ```
///
/// When the backend is down or slow, decisions are still served (from what was loaded, else as
/// a new visitor), failed writes stay pending and are retried with backoff, and each kind of
/// failure is logged at most once per 10 s and counted in ``counters``.
public final class WriteBehindVisitorStore: SharedVisitorDataStore, Sendable {
    /// Write-behind and retry settings.
    public struct Options: Sendable, Hashable {
        /// How long changes gather before they are written.
        public var writeBehind: Duration
        /// Visitors written per backend round trip.
        public var batchSize: Int
        /// The first retry delay after a failed write; doubled up to `maximumRetryDelay` (no jitter).
        public var retryDelay: Duration
        /// The longest delay between retries.
        public var maximumRetryDelay: Duration
        /// Visitors with unwritten changes kept; past it the oldest marks are dropped (their
        /// data stays in memory; only the shared copy misses the change) and counted.
        public var maximumPendingVisitors: Int

        /// Settings for a store; the defaults suit a web server.
        public init(writeBehind: Duration = .milliseconds(20), batchSize: Int = 256, retryDelay: Duration = .milliseconds(200),
                    maximumRetryDelay: Duration = .seconds(30), maximumPendingVisitors: Int = 100_000) {
            self.writeBehind = writeBehind
            self.batchSize = max(1, batchSize)
            self.retryDelay = retryDelay
            self.maximumRetryDelay = maximumRetryDelay
            self.maximumPendingVisitors = max(1, maximumPendingVisitors)
        }

        /// The waits between failed writes.
        var retryBackoff: Backoff { Backoff(initial: retryDelay, maximum: maximumRetryDelay) }
    }

    /// What the store did with the backend.
    public struct Counters: Sendable, Hashable, CustomStringConvertible {
        /// Loads answered by the backend.
        public var loads = 0
        /// Loads that failed; their visitors were decided from what this instance holds.
        public var loadFailures = 0
        /// Visitors written to the backend.
        public var saves = 0
        /// Write round trips that failed (their visitors stay pending).
        public var saveFailures = 0
        /// Goals recorded through the backend.
        public var goalRecords = 0
        /// Goal records that could not reach the backend; this instance's dedup decided.
        public var goalRecordFailures = 0
        /// Visitors whose changes are not yet written.
        public var pending = 0
        /// Pending marks dropped at ``Options/maximumPendingVisitors``.
        public var droppedWrites = 0
        /// Sticky decisions this instance made but another had stored first (the first kept).
        public var conflicts = 0

        public var description: String {
            "loads \(loads) (failed \(loadFailures)), saves \(saves) (failed \(saveFailures)), goal records \(goalRecords) "
                + "(failed \(goalRecordFailures)), pending \(pending), dropped writes \(droppedWrites), conflicts \(conflicts)"
        }
    }

    private struct State {
        var dirty: [VisitorKey: UInt64] = [:]
        var order: [(key: VisitorKey, mark: UInt64)] = []
        var orderStart = 0
        var nextMark: UInt64 = 0
        var writerRunning = false
        /// Keys whose write is on its way to the backend (a count per key).
        var inFlight: [VisitorKey: Int] = [:]
        var failures = 0
        var counters = Counters()
        /// Warnings per kind, at most one line per 10 s each (on the store's clock).
        var warnings: [String: RateLimitedCount] = [:]
        /// Callers waiting for writes in flight to end; woken after each write.
        var writeWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let local: any VisitorDataStore
    private let backend: any VisitorDataBackend
    private let options: Options
    private let log: SDKLog
    private let clock: any SleepClock
    private let state = Locked(State())

    /// A shared store over `backend` whose decisions read and write `local`: this instance's
    /// copy, which the store loads into and writes behind from. Give it a store no one else
    /// writes to. Write retries and warnings are timed on `clock`.
    public init(backend: any VisitorDataBackend, local: any VisitorDataStore,
                options: Options = Options(), log: SDKLog = .silent, clock: any SleepClock = .continuous) {
        self.local = local
        self.backend = backend
        self.options = options
        self.log = log
        self.clock = clock
    }

    /// What the store did with the backend so far.
    public var counters: Counters {
        state.withValue { state in
            var counters = state.counters
            counters.pending = state.dirty.count
            return counters
        }
    }

    // MARK: VisitorDataStore (the decision path: memory only)

    public func data(for key: VisitorKey) -> VisitorData? { local.data(for: key) }

    @discardableResult
    public func update<Result>(_ key: VisitorKey, _ body: (inout VisitorData) -> Result) -> Result {
        var changed = false
        let result = local.update(key) { data -> Result in
            let before = data
            let result = body(&data)
            changed = data != before
            return result
        }
        if changed { markDirty(key) }
        return result
    }

    /// Writes every pending change now, waits for writes already on their way, then flushes the
    /// local store; returns how many visitors this call wrote to the backend.
    public func flush() async -> Int {
        var written = 0
        while let batch = takeBatch() {
            guard await write(batch) else { break }
            written += batch.count
        }
        await waitForWrites { !$0.isEmpty }
        _ = await local.flush()
        return written
    }

    /// Finishes loading the local store.
    public func prepare() async {
        await local.prepare()
    }

    /// Waits while `busy` holds for the in-flight keys, woken as each write ends (writes are
    /// bounded by the backend's deadlines, so this ends).
    private func waitForWrites(_ busy: ([VisitorKey: Int]) -> Bool) async {
        while state.withValue({ busy($0.inFlight) }) {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let stillBusy = state.withValue { state -> Bool in
                    guard busy(state.inFlight) else { return false }
                    state.writeWaiters.append(continuation)
                    return true
                }
                if !stillBusy { continuation.resume() }
            }
        }
    }

    // MARK: SharedVisitorDataStore

    /// Not claimed yet: decisions written behind settle on the first stored.
    public var firstDecisionClaim: FirstDecisionClaim { .never }

    public func load(_ key: VisitorKey) async -> VisitorLoadResult {
        do {
            let stored = try await backend.load(key)
            state.withValue { $0.counters.loads += 1 }
            guard let stored else { return .notFound }
            let unsaved = state.withValue { $0.dirty[key] != nil || $0.inFlight[key] != nil }
            local.update(key) { data in data = Self.merged(stored: stored, local: data, localUnsaved: unsaved) }
            return .loaded
        } catch {
            state.withValue { $0.counters.loadFailures += 1 }
            let reason = "\(error)"
            warn("load", "visitor data could not be loaded (\(reason)); deciding from what this instance holds")
            return .failed(reason)
        }
    }

    @discardableResult
    public func save(_ key: VisitorKey) async -> Bool {
        let isDirty = state.withValue { $0.dirty.removeValue(forKey: key) != nil }
        if isDirty { return await write([key]) }
        // Written behind right now: done once that write is.
        await waitForWrites { $0[key] != nil }
        return state.withValue { $0.dirty[key] == nil }
    }

    public func recordGoalOnce(_ key: VisitorKey, goalId: String) async -> Bool? {
        do {
            let first = try await backend.recordGoalOnce(key, goalId: goalId)
            state.withValue { $0.counters.goalRecords += 1 }
            return first
        } catch {
            state.withValue { $0.counters.goalRecordFailures += 1 }
            warn("goal", "goal dedup across instances unavailable (\(error)); deduplicating on this instance only")
            return nil
        }
    }

    // MARK: Write-behind

    private func markDirty(_ key: VisitorKey) {
        let start: Bool = state.withValue { state in
            if state.dirty[key] == nil {
                state.nextMark += 1
                state.dirty[key] = state.nextMark
                state.order.append((key, state.nextMark))
                if state.dirty.count > options.maximumPendingVisitors, let oldest = popOldest(&state) {
                    state.dirty[oldest] = nil
                    state.counters.droppedWrites += 1
                }
            }
            guard !state.writerRunning else { return false }
            state.writerRunning = true
            return true
        }
        if start { Task.detached { await self.runWriter() } }
    }

    /// The oldest key still marked, skipping stale entries of the order queue.
    private func popOldest(_ state: inout State) -> VisitorKey? {
        while state.orderStart < state.order.count {
            let entry = state.order[state.orderStart]
            state.orderStart += 1
            if state.dirty[entry.key] == entry.mark { return entry.key }
        }
        return nil
    }

    /// Up to a batch of marked keys, oldest first, unmarked; `nil` when none.
    private func takeBatch() -> [VisitorKey]? {
        state.withValue { takeBatch(&$0) }
    }

    private func takeBatch(_ state: inout State) -> [VisitorKey]? {
        var batch: [VisitorKey] = []
        while batch.count < options.batchSize, let key = popOldest(&state) {
            state.dirty[key] = nil
            batch.append(key)
        }
        if state.orderStart > 4096 && state.orderStart * 2 > state.order.count {
            state.order.removeFirst(state.orderStart)
            state.orderStart = 0
        }
        return batch.isEmpty ? nil : batch
    }

    private func runWriter() async {
        while true {
            let failures = state.withValue { $0.failures }
            let delay = failures == 0 ? options.writeBehind : options.retryBackoff.delay(afterFailures: failures)
            try? await clock.sleep(for: delay)
            let batch: [VisitorKey]? = state.withValue { state in
                guard let batch = takeBatch(&state) else {
                    // Under the lock, so a change marked after this sees no writer and starts one.
                    state.writerRunning = false
                    return nil
                }
                return batch
            }
            guard let batch else { return }
            let written = await write(batch)
            state.withValue { $0.failures = written ? 0 : $0.failures + 1 }
        }
    }

    /// Writes the keys' current data; on failure they are marked again for a retry.
    private func write(_ keys: [VisitorKey]) async -> Bool {
        state.withValue { state in for key in keys { state.inFlight[key, default: 0] += 1 } }
        defer {
            let waiters = state.withValue { state in
                for key in keys {
                    let left = (state.inFlight[key] ?? 1) - 1
                    state.inFlight[key] = left > 0 ? left : nil
                }
                defer { state.writeWaiters = [] }
                return state.writeWaiters
            }
            for waiter in waiters { waiter.resume() }
        }
        let records = keys.compactMap { key in local.data(for: key).map { (key, $0) } }
        guard !records.isEmpty else { return true }
        do {
            let stored = try await backend.saveAll(records)
            var conflicts = 0
            for ((key, _), kept) in zip(records, stored) {
                local.update(key) { data in
                    let adopted = Self.adopting(kept, data)
                    conflicts += adopted.changed
                    data = adopted.data
                }
            }
            state.withValue { state in
                state.counters.saves += records.count
                state.counters.conflicts += conflicts
            }
            if conflicts > 0 {
                log.info("shared visitor store: \(conflicts) sticky decision(s) were already stored by another instance; the first kept")
            }
            return true
        } catch {
            state.withValue { $0.counters.saveFailures += 1 }
            warn("save", "visitor data not written (\(error)); \(records.count) visitor(s) will be retried")
            for (key, _) in records { markDirty(key) }
            return false
        }
    }

    /// A warning at most once per 10 s per kind, on the store's clock.
    private func warn(_ kind: String, _ message: String) {
        let now = clock.elapsed
        let due = state.withValue { state -> Bool in
            state.warnings[kind, default: RateLimitedCount()].note(now: now) != nil
        }
        if due { log.warn("shared visitor store: \(message)") }
    }

    // MARK: Merging

    /// Loaded data merged with what this instance holds: stored decisions first, goals and
    /// locations united. Segments: this instance's over the stored ones while it has changes
    /// not yet written; otherwise its copy is older than (or the same as) the stored one, which
    /// is taken.
    static func merged(stored: VisitorData, local: VisitorData, localUnsaved: Bool) -> VisitorData {
        var out = stored
        var bucketing = stored.bucketing
        for (experience, variation) in local.bucketing where bucketing[experience] == nil { bucketing[experience] = variation }
        out.bucketing = bucketing
        out.goals = stored.goals.union(local.goals)
        out.locations = stored.locations.union(local.locations)
        if localUnsaved {
            out.segmentValues = VisitorSegments.storing(local.segmentValues, over: stored.segmentValues)
        } else if stored.segmentValues.isEmpty {
            out.segmentValues = local.segmentValues
        }
        return out
    }

    /// `local` with the stored decisions adopted (first writer wins) and stored goals added;
    /// with the number of decisions that changed.
    static func adopting(_ stored: VisitorData, _ local: VisitorData) -> (data: VisitorData, changed: Int) {
        var out = local
        var bucketing = local.bucketing
        var changed = 0
        for (experience, variation) in stored.bucketing where bucketing[experience] != variation {
            if bucketing[experience] != nil { changed += 1 }
            bucketing[experience] = variation
        }
        out.bucketing = bucketing
        let goals = local.goals.union(stored.goals)
        if goals.count != local.goals.count { out.goals = goals }
        return (out, changed)
    }
}
