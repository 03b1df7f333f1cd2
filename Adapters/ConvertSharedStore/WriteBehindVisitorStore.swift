import ConvertEnvironment
import ConvertStorage
import ConvertSynchronization
import ConvertVisitor
import Foundation

/// Visitor data shared by several SDK instances through a ``VisitorDataBackend`` (Redis):
/// decisions read and write a local store (any ``VisitorDataStore``, typically a memory store),
/// a visitor is loaded from the backend into it before a request is decided, a visitor's first
/// decision for an experience is claimed in the backend, and the rest of its changes are
/// written behind in batches.
///
/// ```swift
/// let store = WriteBehindVisitorStore(backend: RedisVisitorBackend(client: redis), local: MemoryVisitorDataStore())
/// let sdk = ConvertSwiftSDK(configuration: configuration, ports: ConvertPorts(
///     configSource: …, visitorStore: store, visitorIdStore: MemoryVisitorIdStore(), trackingSink: …))
/// let context = await sdk.loadContext(visitorId: id)   // load, then decide synchronously
/// ```
///
/// **Round trips per request.** A returning visitor costs one (the load); a new one two (the
/// load, and the claim of its first decision, with the default
/// ``FirstDecisionClaim/beforeAnswering``). Writes that need no answer (segments, locations,
/// goals already recorded) go behind: gathered for ``Options/writeBehind`` (20 ms) and sent in
/// batches, one pipelined round trip per batch.
///
/// **What a crash can lose.** Nothing claimed or recorded: a claimed decision and a goal
/// recorded once are in the backend before the SDK answers. A process that dies loses the
/// changes not yet written behind: those of the last ``Options/writeBehind`` window and the
/// batch on its way (at most ``Options/batchSize`` visitors), and, while the backend is down,
/// every pending change (at most ``Options/maximumPendingVisitors`` visitors).
///
/// **When the backend is down or slow** decisions are still served, from what this instance
/// holds. The first failed call starts an outage: it is logged once (and its end, with its
/// length), and until the backend answers again — a successful call, or the backend saying so —
/// loads, claims and goal records within the retry backoff answer at once without calling it
/// (a load `.failed`, a claim `nil`: the local decision stands). Failed writes stay pending and
/// are retried with backoff, and all of them are written as soon as the backend is back. A
/// backend that lost its data (a Redis restarted without persistence) gets the visitors this
/// instance saw most recently written again (at most ``Options/rewrittenAfterDataLoss``).
/// ``counters`` counts all of it.
///
/// The store logs through the SDK's log: an SDK given this store hands it its log
/// (``adoptLog(_:)``), unless a log was given here.
public final class WriteBehindVisitorStore: SharedVisitorDataStore, SDKLogAdopting, Sendable {
    /// Write-behind, claim and retry settings.
    public struct Options: Sendable, Hashable {
        /// How long changes gather before they are written.
        public var writeBehind: Duration
        /// Visitors written per backend round trip.
        public var batchSize: Int
        /// The first retry delay after a failed call; doubled up to `maximumRetryDelay` (no
        /// jitter). Also how long after a failure loads, claims and goal records answer at once
        /// without calling the backend (doubling likewise while it keeps failing).
        public var retryDelay: Duration
        /// The longest delay between retries.
        public var maximumRetryDelay: Duration
        /// Visitors with unwritten changes kept; past it the oldest marks are dropped (their
        /// data stays in memory; only the shared copy misses the change) and counted.
        public var maximumPendingVisitors: Int
        /// When a visitor's first decision for an experience is claimed in the backend
        /// (``FirstDecisionClaim/beforeAnswering`` by default: every instance answers the same).
        public var firstDecisionClaim: FirstDecisionClaim
        /// How many of the visitors this instance loaded, claimed or wrote most recently are
        /// written again when the backend reports it lost its data; 0 turns it off.
        public var rewrittenAfterDataLoss: Int

        /// Settings for a store; the defaults suit a web server.
        public init(writeBehind: Duration = .milliseconds(20), batchSize: Int = 256, retryDelay: Duration = .milliseconds(200),
                    maximumRetryDelay: Duration = .seconds(5), maximumPendingVisitors: Int = 100_000,
                    firstDecisionClaim: FirstDecisionClaim = .beforeAnswering, rewrittenAfterDataLoss: Int = 10_000) {
            self.writeBehind = writeBehind
            self.batchSize = max(1, batchSize)
            self.retryDelay = retryDelay
            self.maximumRetryDelay = maximumRetryDelay
            self.maximumPendingVisitors = max(1, maximumPendingVisitors)
            self.firstDecisionClaim = firstDecisionClaim
            self.rewrittenAfterDataLoss = max(0, rewrittenAfterDataLoss)
        }

        /// The waits between failed writes, and the outage's fail-fast windows.
        var retryBackoff: Backoff { Backoff(initial: retryDelay, maximum: maximumRetryDelay) }
    }

    /// What the store did with the backend.
    public struct Counters: Sendable, Hashable, CustomStringConvertible {
        /// Loads answered by the backend.
        public var loads = 0
        /// Loads that failed or were not tried during an outage; their visitors were decided from
        /// what this instance holds.
        public var loadFailures = 0
        /// Visitors written to the backend.
        public var saves = 0
        /// Write round trips that failed (their visitors stay pending).
        public var saveFailures = 0
        /// Goals recorded through the backend.
        public var goalRecords = 0
        /// Goal records that could not reach the backend; this instance's dedup decided.
        public var goalRecordFailures = 0
        /// First decisions claimed in the backend.
        public var claims = 0
        /// Claims another instance had won (its variation holds, even when the same).
        public var claimsLost = 0
        /// Claims not answered (failed, or not tried during an outage): the local decision stood.
        public var claimFailures = 0
        /// Visitors whose changes are not yet written.
        public var pending = 0
        /// Pending marks dropped at ``Options/maximumPendingVisitors``.
        public var droppedWrites = 0
        /// Sticky decisions this instance wrote but another had stored first (the first kept).
        public var conflicts = 0
        /// Times the backend became unreachable.
        public var outages = 0
        /// Visitors written again because the backend lost its data.
        public var rewrittenAfterDataLoss = 0

        public var description: String {
            "loads \(loads) (failed \(loadFailures)), claims \(claims) (lost \(claimsLost), failed \(claimFailures)), "
                + "saves \(saves) (failed \(saveFailures)), goal records \(goalRecords) (failed \(goalRecordFailures)), "
                + "pending \(pending), dropped writes \(droppedWrites), conflicts \(conflicts), outages \(outages), "
                + "rewritten after data loss \(rewrittenAfterDataLoss)"
        }
    }

    /// Since when calls fail, and until when they are not tried.
    private struct Outage {
        var since: Duration
        var failures: Int
        var retryAt: Duration
        var reason: String
        /// Whether its start was logged (so its end is).
        var logged: Bool
    }

    /// A visitor with changes not yet written: its place in the queue, what the backend is known
    /// to hold of it (the data before the first unwritten change, plus what claims and goal
    /// records stored since), and whether the backend renewed its time to live since.
    private struct Pending {
        var mark: UInt64
        var base: VisitorData
        var renewed: Bool
    }

    /// How long the writes behind leave out a new decision awaiting its claim.
    static let claimWait: Duration = .seconds(2)

    /// What a claim or a goal record stored for a visitor before its local change is made.
    private struct Stored {
        var decisions: [(experience: String, variation: String)] = []
        var goals: [String] = []
    }

    private struct State {
        var dirty: [VisitorKey: Pending] = [:]
        /// Claims and goal records of visitors not marked yet, applied to the base when they are.
        var stored: [VisitorKey: Stored] = [:]
        /// New decisions whose claim comes after the answer (``FirstDecisionClaim/afterAnswering``),
        /// since when: the claim writes them, the writes behind leave them out meanwhile (for at
        /// most ``claimWait``), else a write behind could store one first and its claim would not be.
        var awaitingClaims: [VisitorKey: [InternedId: Duration]] = [:]
        var order: [(key: VisitorKey, mark: UInt64)] = []
        var orderStart = 0
        var nextMark: UInt64 = 0
        var writerRunning = false
        var draining = false
        /// Keys whose write is on its way to the backend (a count per key).
        var inFlight: [VisitorKey: Int] = [:]
        var failures = 0
        var counters = Counters()
        var outage: Outage?
        /// When the last outage ended.
        var recovered: Duration?
        /// The visitors seen last (loaded, claimed, written), oldest overwritten first.
        var recent: [VisitorKey] = []
        var recentNext = 0
        /// Warnings per kind, at most one line per 10 s each (on the store's clock).
        var warnings: [String: RateLimitedCount] = [:]
        /// Callers waiting for writes in flight to end; woken after each write.
        var writeWaiters: [CheckedContinuation<Void, Never>] = []
        /// Where lines go, and whether it was given at init (then kept).
        var log: SDKLog
        var logGiven: Bool
    }

    private let local: any VisitorDataStore
    private let backend: any VisitorDataBackend
    private let backendName: String
    private let options: Options
    private let clock: any SleepClock
    private let state: Locked<State>

    /// A shared store over `backend` whose decisions read and write `local`: this instance's
    /// copy, which the store loads into and writes behind from. Give it a store no one else
    /// writes to. Lines go to `log` when given, else to the log of the SDK the store is given
    /// to. Write retries and warnings are timed on `clock`.
    public init(backend: any VisitorDataBackend, local: any VisitorDataStore,
                options: Options = Options(), log: SDKLog? = nil, clock: any SleepClock = .continuous) {
        self.local = local
        self.backend = backend
        backendName = (backend as? any CustomStringConvertible)?.description ?? "the shared backend (\(type(of: backend)))"
        self.options = options
        self.clock = clock
        state = Locked(State(log: log ?? .silent, logGiven: log != nil))
        backend.subscribe { [weak self] event in self?.handle(event) }
    }

    /// Logs through `log` from now on, unless the store was given a log of its own: an SDK given
    /// this store calls it with the SDK's log.
    public func adoptLog(_ log: SDKLog) {
        state.withValue { state in
            if !state.logGiven { state.log = log }
        }
    }

    private var log: SDKLog { state.withValue { $0.log } }

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
        var before: VisitorData?
        var decided: [InternedId] = []
        let claimsAfter = options.firstDecisionClaim == .afterAnswering
        let result = local.update(key) { data -> Result in
            let old = data
            let result = body(&data)
            if data != old {
                before = old
                if claimsAfter {
                    data.forEachDecision { experience, _ in
                        if !old.hasVariation(forExperience: experience) { decided.append(experience) }
                    }
                }
            }
            return result
        }
        if !decided.isEmpty {
            let now = clock.elapsed
            state.withValue { state in
                if state.awaitingClaims.count >= 4_096 { state.awaitingClaims = [:] }
                for experience in decided { state.awaitingClaims[key, default: [:]][experience] = now }
            }
        }
        if let before { markDirty(key, base: before, renewed: false) }
        return result
    }

    /// Writes every pending change now (whether or not the backend is in an outage), waits for
    /// writes already on their way, then flushes the local store; returns how many visitors
    /// this call wrote to the backend.
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

    /// ``Options/firstDecisionClaim``.
    public var firstDecisionClaim: FirstDecisionClaim { options.firstDecisionClaim }

    public func load(_ key: VisitorKey) async -> VisitorLoadResult {
        if let reason = skippedDuringOutage() { return loadFailed(reason) }
        let started = clock.elapsed
        let stored: VisitorData?
        do {
            stored = try await backend.load(key)
        } catch {
            noteFailure(error, startedAt: started)
            return loadFailed("\(error)")
        }
        let unsaved = state.withValue { state -> Bool in
            state.counters.loads += 1
            if stored != nil { remember(key, &state) }
            return state.dirty[key] != nil || state.inFlight[key] != nil
        }
        noteSuccess(startedAt: started)
        guard let stored else { return .notFound }
        local.update(key) { data in
            data = data.isEmpty ? stored : Self.merged(stored: stored, local: data, localUnsaved: unsaved)
        }
        return .loaded
    }

    private func loadFailed(_ reason: String) -> VisitorLoadResult {
        state.withValue { $0.counters.loadFailures += 1 }
        warn("load", "visitor data could not be loaded (\(reason)); deciding from what this instance holds")
        return .failed(reason)
    }

    @discardableResult
    public func save(_ key: VisitorKey) async -> Bool {
        if let pending = state.withValue({ $0.dirty.removeValue(forKey: key) }) { return await write([(key, pending)]) }
        // Written behind right now: done once that write is.
        await waitForWrites { $0[key] != nil }
        return state.withValue { $0.dirty[key] == nil }
    }

    public func recordGoalOnce(_ key: VisitorKey, goalId: String) async -> Bool? {
        if skippedDuringOutage() != nil {
            state.withValue { $0.counters.goalRecordFailures += 1 }
            return nil
        }
        let started = clock.elapsed
        do {
            let first = try await backend.recordGoalOnce(key, goalId: goalId)
            state.withValue { state in
                state.counters.goalRecords += 1
                note(key, &state) { $0.goals.append(goalId) } apply: { $0.insertGoal(InternedId(goalId)) }
            }
            noteSuccess(startedAt: started)
            return first
        } catch {
            state.withValue { $0.counters.goalRecordFailures += 1 }
            noteFailure(error, startedAt: started)
            return nil
        }
    }

    /// Claims the visitor's first decision for the experience in the backend, blocking for at
    /// most the backend's deadline: the variation that holds and whether this claim stored it
    /// (only then does this instance send the bucketing event). `nil` when the backend could
    /// not answer, and at once during an outage's fail-fast window: the local decision stands.
    public func claimFirstDecision(_ key: VisitorKey, experienceId: String, variationId: String) -> VariationClaim? {
        guard options.firstDecisionClaim != .never else { return VariationClaim(variationId: variationId, isFirst: true) }
        if skippedDuringOutage() != nil {
            state.withValue { $0.counters.claimFailures += 1 }
            return nil
        }
        let started = clock.elapsed
        do {
            let claim = try backend.claimVariation(key, experienceId: experienceId, variationId: variationId)
            claimed(key, experienceId: experienceId, claim, startedAt: started)
            return claim
        } catch {
            state.withValue { $0.counters.claimFailures += 1 }
            noteFailure(error, startedAt: started)
            return nil
        }
    }

    /// ``claimFirstDecision(_:experienceId:variationId:)`` without blocking a thread. A claim
    /// that could not be made leaves the decision to the writes behind.
    public func claimFirstDecisionLater(_ key: VisitorKey, experienceId: String, variationId: String) async -> VariationClaim? {
        guard options.firstDecisionClaim != .never else { return VariationClaim(variationId: variationId, isFirst: true) }
        let experience = InternedId(experienceId)
        if skippedDuringOutage() != nil {
            state.withValue { $0.counters.claimFailures += 1 }
            unclaimed(key, experience)
            return nil
        }
        let started = clock.elapsed
        do {
            let claim = try await backend.claimVariationLater(key, experienceId: experienceId, variationId: variationId)
            claimed(key, experienceId: experienceId, claim, startedAt: started)
            state.withValue { _ = Self.stopAwaiting(key, experience, &$0) }
            return claim
        } catch {
            state.withValue { $0.counters.claimFailures += 1 }
            noteFailure(error, startedAt: started)
            unclaimed(key, experience)
            return nil
        }
    }

    /// A decision whose claim failed: written behind like any change (first writer wins).
    private func unclaimed(_ key: VisitorKey, _ experience: InternedId) {
        guard state.withValue({ Self.stopAwaiting(key, experience, &$0) }), var base = local.data(for: key) else { return }
        base.removeVariation(forExperience: experience)
        markDirty(key, base: base, renewed: false)
    }

    /// Removes a decision from those awaiting their claim; `false` when it was not there.
    private static func stopAwaiting(_ key: VisitorKey, _ experience: InternedId, _ state: inout State) -> Bool {
        guard state.awaitingClaims[key]?.removeValue(forKey: experience) != nil else { return false }
        if state.awaitingClaims[key]?.isEmpty == true { state.awaitingClaims[key] = nil }
        return true
    }

    private func claimed(_ key: VisitorKey, experienceId: String, _ claim: VariationClaim, startedAt started: Duration) {
        let holder = claim.variationId
        state.withValue { state in
            state.counters.claims += 1
            if !claim.isFirst { state.counters.claimsLost += 1 }
            remember(key, &state)
            note(key, &state) { $0.decisions.append((experienceId, holder)) } apply: {
                $0.setVariation(InternedId(holder), forExperience: InternedId(experienceId))
            }
        }
        noteSuccess(startedAt: started)
    }

    /// Notes what a claim or goal record stored (and that it renewed the time to live): into the
    /// visitor's pending base when it has changes waiting, else kept for its next change (the
    /// decision path stores locally right after it claims). Notes of visitors that change no more
    /// are dropped past 4,096 (a write then sends what it would have skipped).
    private func note(_ key: VisitorKey, _ state: inout State, _ record: (inout Stored) -> Void,
                      apply: (inout VisitorData) -> Void) {
        if state.dirty[key] != nil {
            apply(&state.dirty[key]!.base)
            state.dirty[key]!.renewed = true
            return
        }
        if state.stored.count >= 4_096, state.stored[key] == nil { state.stored = [:] }
        record(&state.stored[key, default: Stored()])
    }

    // MARK: Outages

    /// The reason to answer without calling the backend, while an outage's fail-fast window lasts.
    private func skippedDuringOutage() -> String? {
        let now = clock.elapsed
        return state.withValue { state -> String? in
            guard let outage = state.outage, now < outage.retryAt else { return nil }
            return "\(backendName) unreachable since \(Self.seconds(now - outage.since)) s (\(outage.reason)); "
                + "next call in \(Self.milliseconds(outage.retryAt - now)) ms"
        }
    }

    /// A failed call: starts an outage (logged once), or lengthens its fail-fast window. An
    /// error about one visitor's record is reported, not taken for an outage; nor is the failure
    /// of a call that began before the backend last came back.
    private func noteFailure(_ error: any Error, startedAt started: Duration) {
        guard !(error is any VisitorRecordError) else {
            warn("record", "\(error); that visitor is decided from what this instance holds")
            return
        }
        beginOutage(reason: "\(error)", startedAt: started)
    }

    private func beginOutage(reason: String, startedAt started: Duration? = nil) {
        let now = clock.elapsed
        let logged = state.withValue { state -> Bool in
            if let started, let recovered = state.recovered, started < recovered { return false }
            if var outage = state.outage {
                outage.failures += 1
                outage.retryAt = now + options.retryBackoff.delay(afterFailures: outage.failures)
                outage.reason = reason
                state.outage = outage
                return false
            }
            state.counters.outages += 1
            let due = state.warnings["outage", default: RateLimitedCount()].note(now: now) != nil
            state.outage = Outage(since: now, failures: 1, retryAt: now + options.retryBackoff.delay(afterFailures: 1),
                                  reason: reason, logged: due)
            return due
        }
        if logged {
            log.warn("shared visitor store: \(backendName) unreachable (\(reason)); deciding from this instance's "
                + "visitor data, writes kept pending until it answers again")
        }
    }

    /// A call that succeeded: ends an outage (logged, when its start was) and writes what is
    /// pending — unless the call began before the outage did (its answer is older news).
    private func noteSuccess(startedAt started: Duration? = nil, downFor reported: Duration? = nil) {
        let now = clock.elapsed
        guard let ended = state.withValue({ state -> (Outage, Int)? in
            guard let outage = state.outage else { return nil }
            if let started, started < outage.since { return nil }
            state.outage = nil
            state.recovered = now
            state.failures = 0
            return (outage, state.dirty.count)
        }) else { return }
        if ended.0.logged {
            log.warn("shared visitor store: \(backendName) reachable again after \(Self.seconds(reported ?? (now - ended.0.since))) s"
                + (ended.1 > 0 ? "; writing the \(ended.1) visitor(s) pending" : ""))
        }
        drain()
    }

    private func handle(_ event: VisitorDataBackendEvent) {
        switch event {
        case .unavailable(let reason):
            beginOutage(reason: reason)
        case .available(let downFor):
            noteSuccess(downFor: downFor)
        case .dataLost:
            Task.detached { self.rewriteRecent() }
        }
    }

    /// Marks the visitors seen last for writing again: the backend lost what it held of them.
    private func rewriteRecent() {
        let keys = state.withValue { state -> [VisitorKey] in
            var seen = Set<VisitorKey>()
            return state.recent.filter { seen.insert($0).inserted }
        }
        var marked = 0
        for key in keys where local.data(for: key) != nil {
            markDirty(key, base: VisitorData(), renewed: false, replacingBase: true)
            marked += 1
        }
        state.withValue { $0.counters.rewrittenAfterDataLoss += marked }
        log.warn("shared visitor store: \(backendName) lost the data it held (restarted without persistence?); "
            + "writing again the \(marked) visitor(s) this instance saw last")
    }

    private func remember(_ key: VisitorKey, _ state: inout State) {
        let capacity = options.rewrittenAfterDataLoss
        guard capacity > 0 else { return }
        if state.recent.count < capacity {
            state.recent.append(key)
        } else {
            state.recent[state.recentNext] = key
            state.recentNext = (state.recentNext + 1) % capacity
        }
    }

    /// Seconds with one decimal, for log lines.
    private static func seconds(_ duration: Duration) -> String {
        let tenths = max(0, milliseconds(duration) / 100)
        return "\(tenths / 10).\(tenths % 10)"
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    // MARK: Write-behind

    /// Marks `key` for writing behind; `base` is what the backend holds of it (kept when the key
    /// is marked already, unless `replacingBase`: a full rewrite).
    private func markDirty(_ key: VisitorKey, base: VisitorData, renewed: Bool, replacingBase: Bool = false) {
        let start: Bool = state.withValue { state in
            if state.dirty[key] == nil {
                var base = base, renewed = renewed
                if let stored = state.stored.removeValue(forKey: key) {
                    for (experience, variation) in stored.decisions {
                        base.setVariation(InternedId(variation), forExperience: InternedId(experience))
                    }
                    for goal in stored.goals { base.insertGoal(InternedId(goal)) }
                    renewed = true
                }
                state.nextMark += 1
                state.dirty[key] = Pending(mark: state.nextMark, base: base, renewed: renewed)
                state.order.append((key, state.nextMark))
                if state.dirty.count > options.maximumPendingVisitors, let oldest = popOldest(&state) {
                    state.dirty[oldest] = nil
                    state.counters.droppedWrites += 1
                }
            } else if replacingBase {
                state.dirty[key]!.base = base
                state.dirty[key]!.renewed = renewed
            }
            guard !state.writerRunning else { return false }
            state.writerRunning = true
            return true
        }
        if start { Task.detached { await self.runWriter() } }
    }

    /// A write that failed: its visitors marked again with the base they had (what the backend
    /// is known to hold), merged with changes marked since.
    private func markAgain(_ batch: [(VisitorKey, Pending)]) {
        for (key, pending) in batch { markDirty(key, base: pending.base, renewed: false, replacingBase: true) }
    }

    /// The oldest key still marked, skipping stale entries of the order queue.
    private func popOldest(_ state: inout State) -> VisitorKey? {
        while state.orderStart < state.order.count {
            let entry = state.order[state.orderStart]
            state.orderStart += 1
            if state.dirty[entry.key]?.mark == entry.mark { return entry.key }
        }
        return nil
    }

    /// Up to a batch of marked keys, oldest first, unmarked; `nil` when none.
    private func takeBatch() -> [(VisitorKey, Pending)]? {
        state.withValue { takeBatch(&$0) }
    }

    private func takeBatch(_ state: inout State) -> [(VisitorKey, Pending)]? {
        var batch: [(VisitorKey, Pending)] = []
        while batch.count < options.batchSize, let key = popOldest(&state) {
            if let pending = state.dirty.removeValue(forKey: key) { batch.append((key, pending)) }
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
            let batch: [(VisitorKey, Pending)]? = state.withValue { state in
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

    /// Writes everything pending now, batch after batch, once the backend is back (one drain at
    /// a time; the writer's backoff is not waited out).
    private func drain() {
        let start = state.withValue { state -> Bool in
            guard !state.draining, !state.dirty.isEmpty else { return false }
            state.draining = true
            return true
        }
        guard start else { return }
        Task.detached {
            while let batch = self.takeBatch() {
                guard await self.write(batch) else { break }
            }
            self.state.withValue { $0.draining = false }
        }
    }

    /// The changes of `data` over `pending.base`: new decisions and goals, locations and
    /// segments when they differ; the renewal unless the backend just renewed.
    private static func changes(_ key: VisitorKey, _ data: VisitorData, over pending: Pending,
                                leavingOut awaiting: [InternedId] = []) -> VisitorDataChanges {
        let base = pending.base
        var decisions: [String: String] = [:]
        data.forEachDecision { experience, variation in
            if !base.hasVariation(forExperience: experience), !awaiting.contains(experience) {
                decisions[experience.string] = variation.string
            }
        }
        let goals = base.isEmpty ? data.goals : data.goals.subtracting(base.goals)
        let locations = data.locations
        let segments = data.segmentValues
        return VisitorDataChanges(key: key, decisions: decisions, goals: goals,
                                  locations: locations == base.locations ? nil : locations,
                                  segmentValues: segments == base.segmentValues ? nil : segments,
                                  renewsExpiry: !pending.renewed)
    }

    /// Writes the keys' changes; on failure they are marked again for a retry.
    private func write(_ batch: [(VisitorKey, Pending)]) async -> Bool {
        state.withValue { state in for (key, _) in batch { state.inFlight[key, default: 0] += 1 } }
        defer {
            let waiters = state.withValue { state in
                for (key, _) in batch {
                    let left = (state.inFlight[key] ?? 1) - 1
                    state.inFlight[key] = left > 0 ? left : nil
                }
                defer { state.writeWaiters = [] }
                return state.writeWaiters
            }
            for waiter in waiters { waiter.resume() }
        }
        // New decisions still awaiting their claim are left out (and looked at again next time).
        let now = clock.elapsed
        let awaiting = state.withValue { state -> [VisitorKey: [InternedId]] in
            guard !state.awaitingClaims.isEmpty else { return [:] }
            var out: [VisitorKey: [InternedId]] = [:]
            for (key, _) in batch {
                guard let decisions = state.awaitingClaims[key] else { continue }
                for (experience, since) in decisions where now - since < Self.claimWait { out[key, default: []].append(experience) }
            }
            return out
        }
        var leftOut: [(VisitorKey, VisitorData)] = []
        let changes = batch.compactMap { key, pending -> VisitorDataChanges? in
            guard let data = local.data(for: key) else { return nil }
            let waiting = awaiting[key] ?? []
            if !waiting.isEmpty {
                var written = data
                for experience in waiting { written.removeVariation(forExperience: experience) }
                leftOut.append((key, written))
            }
            let changes = Self.changes(key, data, over: pending, leavingOut: waiting)
            return changes.isEmpty && !changes.renewsExpiry ? nil : changes
        }
        defer { for (key, written) in leftOut { markDirty(key, base: written, renewed: true) } }
        guard !changes.isEmpty else { return true }
        let started = clock.elapsed
        do {
            let kept = try await backend.merge(changes)
            var conflicts = 0
            for (change, stored) in zip(changes, kept) where !stored.isEmpty {
                local.update(change.key) { data in
                    let adopted = Self.adopting(stored, data)
                    conflicts += adopted.changed
                    data = adopted.data
                }
            }
            state.withValue { state in
                state.counters.saves += changes.count
                state.counters.conflicts += conflicts
                for change in changes { remember(change.key, &state) }
            }
            noteSuccess(startedAt: started)
            if conflicts > 0 {
                log.info("shared visitor store: \(conflicts) sticky decision(s) were already stored by another instance; the first kept")
            }
            return true
        } catch {
            state.withValue { $0.counters.saveFailures += 1 }
            noteFailure(error, startedAt: started)
            warn("save", "visitor data not written (\(error)); \(changes.count) visitor(s) will be retried")
            markAgain(batch)
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

    /// `local` with the decisions another instance stored first adopted (experience id →
    /// variation id); with the number of decisions that changed.
    static func adopting(_ stored: [String: String], _ local: VisitorData) -> (data: VisitorData, changed: Int) {
        var out = local
        var bucketing = local.bucketing
        var changed = 0
        for (experience, variation) in stored where bucketing[experience] != variation {
            if bucketing[experience] != nil { changed += 1 }
            bucketing[experience] = variation
        }
        out.bucketing = bucketing
        return (out, changed)
    }
}
