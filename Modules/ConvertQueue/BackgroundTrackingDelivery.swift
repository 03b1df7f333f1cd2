import ConvertEnvironment
import ConvertStorage
import ConvertSynchronization
import ConvertTracking
import ConvertTransport
import Foundation

/// Delivers tracking batches through a `BackgroundUploadSession` (ConvertTransport): the system carries each
/// upload on while the app is suspended, and the batch counts as delivered only when its
/// outcome comes back.
///
/// An upload's events are written to a small ledger (a ``ByteStore``) before it starts (one
/// write of that upload's events; its end removes them). When a
/// launch ends during an upload, the queue's journal still holds the events; on the next start
/// the delivery learns the outcomes of the earlier launch's uploads (waiting up to
/// `reconcileTimeout`) and leaves the delivered ones out of the batches it sends again, so
/// nothing is lost and only an upload still unsettled at that deadline can be sent twice.
///
/// The completion handler the system gives the app for the session is held until the session
/// reports the end of its events, or `handlerTimeout` passes, and is run exactly once.
public final class BackgroundTrackingDelivery: TrackingDelivery, Sendable {
    private struct State {
        var waiters: [String: CheckedContinuation<BackgroundUploadCompletion?, Never>] = [:]
        /// Ends a wait at its deadline; cancelled when the wait ends first.
        var timers: [String: Task<Void, Never>] = [:]
        /// Outcomes of uploads started by an earlier launch, until reconciled.
        var earlierOutcomes: [String: BackgroundUploadCompletion] = [:]
        var entries: [BackgroundUploadLedger.Entry]
        var earlierLabels: Set<String>
        var reconciled = false
        var reconcileWaiter: CheckedContinuation<Bool, Never>?
        var deliveredEarlier = EventTally()
        var handler: (id: UInt64, run: @Sendable () -> Void)?
        var nextHandlerId: UInt64 = 0
        /// Whether the app is in the background (see ``noteLifecycle(_:)``).
        var inBackground = false
    }

    private let session: any BackgroundUploadSession
    private let http: HTTPTrackingDelivery
    private let ledger: BackgroundUploadLedger
    private let log: SDKLog
    private let clock: any SleepClock
    private let answerTimeout: Duration
    private let reconcileTimeout: Duration
    private let handlerTimeout: Duration
    private let state: Locked<State>

    /// A delivery to `endpoint` through `session`, with the body fields and bound of `options`,
    /// its ledger in `ledger`. `answerTimeout` bounds the wait for one upload's outcome while the
    /// app is in the foreground (the upload is then cancelled and retried; in the background the
    /// system's deferral is waited out, see ``noteLifecycle(_:)``); `reconcileTimeout` the wait for the outcomes of an
    /// earlier launch's uploads; `handlerTimeout` how long the system's completion handler is held.
    public init(session: any BackgroundUploadSession, endpoint: TrackingEndpoint, options: TrackingQueueOptions = TrackingQueueOptions(),
                ledger: any ByteStore, log: SDKLog = .silent, clock: any SleepClock = .continuous,
                answerTimeout: Duration = .seconds(120), reconcileTimeout: Duration = .seconds(5),
                handlerTimeout: Duration = .seconds(25)) {
        self.session = session
        http = HTTPTrackingDelivery(transport: NoTransport(), endpoint: endpoint, options: options)
        self.ledger = BackgroundUploadLedger(store: ledger)
        self.log = log
        self.clock = clock
        self.answerTimeout = answerTimeout
        self.reconcileTimeout = reconcileTimeout
        self.handlerTimeout = handlerTimeout
        let entries = self.ledger.load()
        state = Locked(State(entries: entries, earlierLabels: Set(entries.filter { !$0.delivered }.map(\.label))))
        session.setReceiver(BackgroundUploadReceiver(
            completed: { [weak self] in self?.completed($0) },
            finishedEvents: { [weak self] in self?.runHandler(nil) }))
    }

    deinit {
        // The system's handler must run even when no one is left to wait for the session.
        if let handler = state.withValue({ $0.handler }) { session.runSystemCompletionHandler(handler.run) }
    }

    /// The session's identifier, as the system names it to the app.
    public var sessionIdentifier: String { session.identifier }

    /// Takes the system's completion handler for `identifier` when it names this delivery's
    /// session, and runs it once the session's events are handled; returns `false` (leaving
    /// the handler to the caller) for another session.
    public func handleEvents(forSession identifier: String, completionHandler: @escaping @Sendable () -> Void) -> Bool {
        guard identifier == session.identifier else { return false }
        let (id, previous) = state.withValue { state -> (UInt64, (@Sendable () -> Void)?) in
            let previous = state.handler?.run
            let id = state.nextHandlerId
            state.nextHandlerId += 1
            state.handler = (id, completionHandler)
            return (id, previous)
        }
        // A newer wake replaces an older one; the older handler is still owed its call.
        if let previous { session.runSystemCompletionHandler(previous) }
        let clock = clock
        let timeout = handlerTimeout
        Task { [weak self] in
            try? await clock.sleep(for: timeout)
            self?.runHandler(id)
        }
        return true
    }

    /// Follows the app's life: while it is in the background, an unanswered upload is left to
    /// the system rather than cancelled at the answer deadline.
    public func noteLifecycle(_ event: AppLifecycleEvent) {
        switch event {
        case .didEnterBackground: state.withValue { $0.inBackground = true }
        case .didBecomeActive: state.withValue { $0.inBackground = false }
        case .willResignActive, .willTerminate: break
        }
    }

    /// Runs the held handler (only the one numbered `id`, when given), at most once.
    private func runHandler(_ id: UInt64?) {
        let handler = state.withValue { state -> (@Sendable () -> Void)? in
            guard let held = state.handler, id == nil || held.id == id else { return nil }
            state.handler = nil
            return held.run
        }
        if let handler { session.runSystemCompletionHandler(handler) }
    }

    public func deliver(_ events: [TrackingEvent]) async -> TrackingDeliveryAnswer {
        await reconcile()
        let (matched, rest) = state.withValue { $0.deliveredEarlier.split(events) }
        if rest.isEmpty {
            consume(matched)
            return .delivered
        }
        var request: HTTPRequest
        switch http.request(for: rest) {
        case .success(let built): request = built
        case .failure(let unsent): return unsent.answer
        }
        request.setHeader("User-Agent", ConvertAgent.userAgent)
        let label = UUID().uuidString
        record(.open) { $0.append(.init(label: label, events: rest, delivered: false, carried: 0)) }
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<BackgroundUploadCompletion?, Never>) in
            state.withValue { $0.waiters[label] = continuation }
            do {
                try session.upload(request, label: label)
            } catch {
                resume(label, with: BackgroundUploadCompletion(label: label, failure: "not started: \(error)"))
                return
            }
            let clock = clock, answerTimeout = answerTimeout
            let timer = Task { [weak self] in
                var deadline = clock.elapsed + answerTimeout
                while (try? await clock.sleep(until: deadline)) != nil {
                    guard let delivery = self else { return }
                    // The system defers uploads of a backgrounded app as it sees fit (an upload
                    // started there is discretionary): cancelling one would only start another,
                    // as deferred. The deadline counts again once the app is in the foreground.
                    if delivery.state.withValue({ $0.inBackground }) {
                        deadline = clock.elapsed + answerTimeout
                        continue
                    }
                    if delivery.resume(label, with: nil) { delivery.session.cancel(label: label) }
                    return
                }
            }
            state.withValue { state in
                if state.waiters[label] != nil { state.timers[label] = timer } else { timer.cancel() }
            }
        }
        record(.open) { $0.removeAll { $0.label == label } }
        let answer: TrackingDeliveryAnswer
        if let response = outcome?.response {
            answer = HTTPTrackingDelivery.answer(for: response)
        } else {
            answer = .retryLater(after: nil, reason: outcome.flatMap(\.failure).map { "failed: \($0)" }
                                 ?? "unanswered within \(answerTimeout); the background upload was cancelled")
        }
        if answer == .delivered { consume(matched) }
        return answer
    }

    /// Resumes the waiter for `label`; `false` when none waits (it was resumed already).
    @discardableResult
    private func resume(_ label: String, with outcome: BackgroundUploadCompletion?) -> Bool {
        let (waiter, timer) = state.withValue { ($0.waiters.removeValue(forKey: label), $0.timers.removeValue(forKey: label)) }
        timer?.cancel()
        guard let waiter else { return false }
        waiter.resume(returning: outcome)
        return true
    }

    private func completed(_ outcome: BackgroundUploadCompletion) {
        if resume(outcome.label, with: outcome) { return }
        let wake = state.withValue { state -> CheckedContinuation<Bool, Never>? in
            guard state.earlierLabels.contains(outcome.label) else { return nil }
            state.earlierOutcomes[outcome.label] = outcome
            defer { state.reconcileWaiter = nil }
            return state.reconcileWaiter
        }
        wake?.resume(returning: true)
    }

    /// Once per launch, before the first batch: learns how the earlier launch's uploads ended.
    /// Delivered events are remembered, so the journal's copies are acknowledged without being
    /// sent; uploads unsettled at the deadline are cancelled and their events sent again.
    private func reconcile() async {
        guard !state.withValue({ $0.reconciled }) else { return }
        let deadline = clock.elapsed + reconcileTimeout
        // Only uploads the system still holds are waited for: one it neither holds nor has
        // reported is taken as lost, and its events are sent again.
        let pending = await session.pendingLabels()
        while clock.elapsed < deadline, await waitForOutcome(of: pending, until: deadline) {}
        let (unsettled, delivered) = state.withValue { state -> ([String], Int) in
            var delivered = 0
            for index in state.entries.indices where state.earlierLabels.contains(state.entries[index].label) {
                let outcome = state.earlierOutcomes[state.entries[index].label]
                if let status = outcome?.response?.status, (200..<300).contains(status) {
                    state.entries[index].delivered = true
                    delivered += state.entries[index].events.count
                }
            }
            let unsettled = state.earlierLabels.subtracting(state.earlierOutcomes.keys)
            state.entries.removeAll { !$0.delivered || $0.carried > BackgroundUploadLedger.maximumCarried }
            for index in state.entries.indices {
                state.entries[index].carried += 1
                state.deliveredEarlier.add(state.entries[index].events)
            }
            state.earlierLabels = []
            state.earlierOutcomes = [:]
            state.reconciled = true
            return (Array(unsettled), delivered)
        }
        for label in unsettled where pending.contains(label) { session.cancel(label: label) }
        record(.all) { _ in }
        if delivered > 0 || !unsettled.isEmpty {
            log.info("background delivery: \(delivered) event(s) of an earlier launch delivered, "
                     + "\(unsettled.count) upload(s) unsettled and sent again")
        }
    }

    /// Waits for the next outcome of an earlier upload in `pending`, or until `deadline`;
    /// `false` at once when none is awaited.
    private func waitForOutcome(of pending: Set<String>, until deadline: Duration) async -> Bool {
        let clock = clock
        let timer = Task { [weak self] in
            guard (try? await clock.sleep(until: deadline)) != nil else { return }
            self?.wakeReconcile()
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let awaited = state.withValue { state -> Bool in
                guard clock.elapsed < deadline,
                      !state.earlierLabels.intersection(pending).subtracting(state.earlierOutcomes.keys).isEmpty else { return false }
                state.reconcileWaiter = continuation
                return true
            }
            if !awaited { continuation.resume(returning: false) }
        }
    }

    private func wakeReconcile() {
        state.withValue { state in
            defer { state.reconcileWaiter = nil }
            return state.reconcileWaiter
        }?.resume(returning: true)
    }

    /// Forgets delivered copies once a batch holding them again is settled.
    private func consume(_ matched: [TrackingEvent]) {
        guard !matched.isEmpty else { return }
        record(.delivered) { entries in
            var left = EventTally()
            left.add(matched)
            for index in entries.indices where entries[index].delivered {
                let (taken, kept) = left.split(entries[index].events)
                left.remove(taken)
                entries[index].events = kept
            }
            entries.removeAll { $0.delivered && $0.events.isEmpty }
        }
        state.withValue { $0.deliveredEarlier.remove(matched) }
    }

    /// Changes the ledger's entries and writes those of `part`, the only ones `change` touches.
    private func record(_ part: BackgroundUploadLedger.Part, _ change: (inout [BackgroundUploadLedger.Entry]) -> Void) {
        let entries = state.withValue { state in
            change(&state.entries)
            return state.entries
        }
        do {
            try ledger.save(entries, part)
        } catch {
            log.error("background delivery ledger not written (a batch may be sent twice after a restart): \(error)")
        }
    }
}

/// The HTTP delivery builds requests only; the session sends them.
private struct NoTransport: HTTPTransport {
    func send(_ request: HTTPRequest) async throws -> HTTPResponse { throw TransportError.cancelled }
}
