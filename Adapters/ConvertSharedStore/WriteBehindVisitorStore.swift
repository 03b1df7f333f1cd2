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
/// are retried with backoff, and all of them are written as soon as the backend is back, those
/// of visitors the local store evicted meanwhile too: the store keeps a pending visitor's data
/// until it is written, for at most ``Options/maximumPendingVisitors`` visitors; past it the
/// oldest changes are dropped, counted and told when the outage ends. A flush that cannot write
/// everything says how many visitors it left and why. A backend that lost its data (a Redis
/// restarted without persistence) gets the visitors this instance saw most recently written
/// again (at most ``Options/rewrittenAfterDataLoss``).
/// ``counters`` counts all of it.
///
/// The store logs through the SDK's log: an SDK given this store hands it its log
/// (``adoptLog(_:)``), unless a log was given here.
public final class WriteBehindVisitorStore: SharedVisitorDataStore, SDKLogAdopting, Sendable {


    /// Since when calls fail, and until when they are not tried.
    struct Outage {
        var since: Duration
        var failures: Int
        var retryAt: Duration
        var reason: String
        /// Whether its start was logged (so its end is).
        var logged: Bool
    }

    /// A visitor with changes not yet written: its place in the queue, what the backend is known
    /// to hold of it (the data before the first unwritten change, plus what claims and goal
    /// records stored since), whether the backend renewed its time to live since, and its data as
    /// of its last change (numbered by ``LocalChange/version``): written from when the local
    /// store, bounded, evicted the visitor before its write.
    struct Pending {
        var mark: UInt64
        var base: VisitorData
        var renewed: Bool
        var latest: VisitorData
        var version: UInt64
        /// The backend's data set `base` describes (``State/dataSet`` when it was taken).
        var dataSet: UInt64
    }

    /// A change to the local copy of a visitor: its data before and after, numbered so that a
    /// later change of the same visitor has a higher number.
    struct LocalChange {
        var before: VisitorData
        var after: VisitorData
        var version: UInt64
    }

    /// What a claim or a goal record stored for a visitor before its local change is made.
    struct Stored {
        var decisions: [(experience: String, variation: String)] = []
        var goals: [String] = []
    }

    struct State {
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
        /// The backend came back while a drain ran: a batch of it that fails (sent before the
        /// return) is sent again rather than left to the writer's backoff.
        var drainAgain = false
        /// Keys whose write is on its way to the backend (a count per key).
        var inFlight: [VisitorKey: Int] = [:]
        var failures = 0
        var counters = Counters()
        /// Pending visitors dropped at ``Options/maximumPendingVisitors`` since the current outage
        /// began (told when it ends).
        var droppedInOutage = 0
        var outage: Outage?
        /// When the last outage ended, or the backend last said it was back: a call begun before
        /// that failed on what was, not on what is.
        var recovered: Duration?
        /// The visitors seen last (loaded, claimed, written), oldest overwritten first.
        var recent: [VisitorKey] = []
        var recentNext = 0
        /// Counts the backend's data losses: a base taken before the last one describes nothing
        /// the backend still holds.
        var dataSet: UInt64 = 0
        /// Warnings per kind, at most one line per 10 s each (on the store's clock).
        var warnings: [String: RateLimitedCount] = [:]
        /// Callers waiting for writes in flight to end; woken after each write.
        var writeWaiters: [CheckedContinuation<Void, Never>] = []
        /// Where lines go, and whether it was given at init (then kept).
        var log: SDKLog
        var logGiven: Bool
    }

    let local: any VisitorDataStore
    let backend: any VisitorDataBackend
    let backendName: String
    let options: Options
    let clock: any SleepClock
    let state: Locked<State>
    /// Numbers the changes to the local copy (``LocalChange/version``).
    let versions = GenerationCounter()

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

    var log: SDKLog { state.withValue { $0.log } }

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
        let (result, change): (result: Result, change: LocalChange?)
        if options.firstDecisionClaim == .afterAnswering {
            // The new decision becomes visible locally and awaiting its claim in one step, the
            // state's lock held around both: a write behind reads the two under the same lock,
            // so it never sees the decision without also seeing that it must leave it out.
            (result, change) = state.withValue { state in
                let outcome = changeLocal(key, body)
                guard let change = outcome.change else { return outcome }
                var decided: [InternedId] = []
                change.after.forEachDecision { experience, _ in
                    if !change.before.hasVariation(forExperience: experience) { decided.append(experience) }
                }
                if !decided.isEmpty {
                    let now = clock.elapsed
                    if state.awaitingClaims.count >= 4_096 { Self.forgetExpiredClaims(now, &state) }
                    for experience in decided { state.awaitingClaims[key, default: [:]][experience] = now }
                }
                return outcome
            }
        } else {
            (result, change) = changeLocal(key, body)
        }
        if let change { markDirty(key, base: change.before, renewed: false, latest: change.after, version: change.version) }
        return result
    }

    /// Changes the local copy of `key`: what `body` returns and, when the data changed, the change.
    func changeLocal<Result>(_ key: VisitorKey, _ body: (inout VisitorData) -> Result) -> (result: Result, change: LocalChange?) {
        var change: LocalChange?
        let result = local.update(key) { data -> Result in
            let old = data
            let result = body(&data)
            if data != old {
                // Numbered under the local store's lock for this visitor: its changes are numbered
                // in the order they are made.
                versions.advance()
                change = LocalChange(before: old, after: data, version: versions.value)
            }
            return result
        }
        return (result, change)
    }

    /// The visitor's data (numbered as a change no newer than it): the local copy, else what its
    /// pending write keeps when the local store evicted it.
    func currentData(_ key: VisitorKey) -> (data: VisitorData, version: UInt64)? {
        let version = versions.value
        if let data = local.data(for: key) { return (data, version) }
        return state.withValue { state in state.dirty[key].map { ($0.latest, $0.version) } }
    }

    /// Keeps `change` as the latest data of a visitor whose write is pending, unless a later
    /// change is kept already.
    func keepLatest(_ key: VisitorKey, _ change: LocalChange?) {
        guard let change else { return }
        state.withValue { state in
            guard let pending = state.dirty[key], change.version > pending.version else { return }
            state.dirty[key]!.latest = change.after
            state.dirty[key]!.version = change.version
        }
    }

    /// Writes every pending change now (whether or not the backend is in an outage), waits for
    /// writes already on their way, then flushes the local store; returns how many visitors
    /// this call wrote to the backend. Changes it could not write stay pending, and one line
    /// says how many and why (they are lost if the process exits, as at a shutdown).
    public func flush() async -> Int {
        var written = 0
        while let batch = takeBatch() {
            guard await write(batch) else { break }
            written += batch.count
        }
        await waitForWrites { !$0.isEmpty }
        reportUnwritten()
        _ = await local.flush()
        return written
    }

    /// Logs the visitors whose changes a flush left unwritten, and why.
    func reportUnwritten() {
        let now = clock.elapsed
        let (left, outage) = state.withValue { ($0.dirty.count, $0.outage) }
        guard left > 0 else { return }
        let why = outage.map { "unreachable since \(Self.seconds(now - $0.since)) s (\($0.reason))" } ?? "its writes failed"
        log.warn("shared visitor store: flushed with \(left) visitor(s)' changes not written to \(backendName): \(why); "
            + "they stay pending in this instance only, and are lost if it exits now")
    }

    /// Finishes loading the local store.
    public func prepare() async {
        await local.prepare()
    }

    /// Waits while `busy` holds for the in-flight keys, woken as each write ends (writes are
    /// bounded by the backend's deadlines, so this ends).
    func waitForWrites(_ busy: ([VisitorKey: Int]) -> Bool) async {
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
        if let reason = skippedDuringOutage() { return loadFailed(key, reason) }
        let started = clock.elapsed
        let stored: VisitorData?
        do {
            stored = try await backend.load(key)
        } catch {
            noteFailure(error, startedAt: started)
            return loadFailed(key, "\(error)")
        }
        let (unsaved, kept) = state.withValue { state -> (Bool, VisitorData?) in
            state.counters.loads += 1
            if stored != nil { remember(key, &state) }
            return (state.dirty[key] != nil || state.inFlight[key] != nil, state.dirty[key]?.latest)
        }
        noteSuccess(startedAt: started)
        guard let stored else {
            restoreEvicted(key, kept)
            return .notFound
        }
        let (_, change) = changeLocal(key) { data in
            if data.isEmpty, let kept { data = kept }
            data = data.isEmpty ? stored : Self.merged(stored: stored, local: data, localUnsaved: unsaved)
        }
        if unsaved { keepLatest(key, change) }
        return .loaded
    }

    func loadFailed(_ key: VisitorKey, _ reason: String) -> VisitorLoadResult {
        let kept = state.withValue { state -> VisitorData? in
            state.counters.loadFailures += 1
            return state.dirty[key]?.latest
        }
        restoreEvicted(key, kept)
        warn("load", "visitor data could not be loaded (\(reason)); deciding from what this instance holds")
        return .failed(reason)
    }

    /// Puts back into the local store a visitor it evicted while its write was pending, so that
    /// it is decided as before.
    func restoreEvicted(_ key: VisitorKey, _ kept: VisitorData?) {
        guard let kept else { return }
        local.update(key) { data in
            if data.isEmpty { data = kept }
        }
    }

    @discardableResult
    public func save(_ key: VisitorKey) async -> Bool {
        if let pending = state.withValue({ $0.dirty.removeValue(forKey: key) }) { return await write([(key, pending)]) }
        // Written behind right now: done once that write is.
        await waitForWrites { $0[key] != nil }
        return state.withValue { $0.dirty[key] == nil }
    }
}
