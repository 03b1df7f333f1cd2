import ConvertEnvironment
import ConvertStorage
import ConvertTracking
import ConvertVisitor
import Foundation

/// Batches tracking events and delivers them to the tracking API, losing none.
///
/// `enqueue` is synchronous and cheap: it journals the event (when a journal is given) and
/// appends it to a bounded buffer. A single delivery loop on the actor hands a batch to its
/// ``TrackingDelivery`` (`HTTPTrackingDelivery` unless another is given) when `batchSize`
/// events are pending or `releaseInterval` after the first pending one, and acts on the
/// delivery's ``TrackingDeliveryAnswer`` (over HTTP, by status class): delivered
/// acknowledges the batch (in the journal too) and fires `api.queue.released`; retry-later
/// (408, 429, 5xx, network failures) resends the same batch (never joined by later events)
/// after an exponential backoff with jitter that new events do not cut short; refused (any
/// other 4xx) splits the batch in halves until the refused events stand alone and are given up
/// (counted as ``TrackingCounters/rejected``), so a bad event never stalls the ones behind it.
/// At start, events left in the journal go first.
///
/// Drop policy: when `capacity` events are pending, or after ``shutdown(timeout:)`` or
/// ``stop()``, new events are refused, counted in ``TrackingCounters/dropped`` and logged at
/// most once per 10 seconds; pending events are never evicted. An event that alone would make a
/// request body over `maximumBatchBytes` can never be sent: it is refused in the same way when
/// offered, so ``offer(_:)`` answers `false` for it.
public actor TrackingQueue: TrackingSink {
    struct Entry {
        let sequence: UInt64?
        /// The entry's place among every event the queue took, for flush targets.
        let ordinal: UInt64
        let event: TrackingEvent

        /// What a slot holds once its entry was taken for delivery: nothing reference-counted
        /// (empty strings and no segments), never read.
        static let consumed = Entry(sequence: nil, ordinal: 0, event: TrackingEvent(
            accountId: "", projectId: "", visitorId: "", segments: nil, payload: .bucketing(experienceId: "", variationId: "")))
    }

    private struct FlushWaiter {
        let id: UInt64
        let target: UInt64
        let continuation: CheckedContinuation<Bool, Never>
        /// Expires the waiter at its timeout; cancelled when it settles first.
        var timer: Task<Void, Never>?
    }

    nonisolated let buffer: PendingBuffer
    /// Carries batches out and classifies the answers; the queue knows nothing else of the transport.
    private let delivery: any TrackingDelivery
    let options: TrackingQueueOptions
    let journal: (any EventJournal)?
    /// Told the size of each batch the server acknowledged (the SDK fires `api.queue.released`).
    private let released: (@Sendable (Int) -> Void)?
    let log: SDKLog
    /// Measures the release interval, backoffs, flush timeouts and log rate limits.
    private let clock: any SleepClock
    /// Wakes the loop for new events.
    let wake: WakeSignal
    /// Wakes the loop out of a backoff; only flush and shutdown send it.
    private let urgent: WakeSignal
    private nonisolated let workerHandle = WorkerHandle()
    /// Batches to send as they are, before anything in the buffer: retries and split halves.
    var units: [[Entry]] = []
    private var sending: [Entry] = []
    private var flushWaiters: [FlushWaiter] = []
    private var nextWaiterId: UInt64 = 0
    private var cutBackoff = false
    private var draining = false
    private var refusals = RateLimitedCount()
    private var judge = RefusalJudge()

    /// Creates a queue handing its batches to `delivery` and starts its delivery loop; recovered
    /// journal entries go first. Batching, bounds, retries, the journal and refusal judging work
    /// as for HTTP; an event over `options`' byte bound on its own (measured as the tracking API's
    /// body) is refused when offered, whatever the delivery; the body fields are the HTTP
    /// delivery's. Intervals and timeouts are measured on `clock`; `released` is told the size of
    /// each batch `delivery` reports delivered.
    public init(delivery: any TrackingDelivery, options: TrackingQueueOptions = TrackingQueueOptions(),
                journal: (any EventJournal)? = nil, log: SDKLog = .silent, clock: any SleepClock = .continuous,
                released: (@Sendable (Int) -> Void)? = nil) {
        self.delivery = delivery
        self.options = options
        self.journal = journal
        self.released = released
        self.log = log
        self.clock = clock
        wake = WakeSignal(clock: clock)
        urgent = WakeSignal(clock: clock)
        buffer = PendingBuffer(capacity: options.capacity, clock: clock)
        if let journal {
            let recovered = Self.recoverEvents(from: journal, log: log)
            buffer.recover(recovered)
        }
        let handle = workerHandle
        handle.set(Task { [weak self] in await self?.run() })
    }

    /// Stops the delivery loop at once; pending events stay in the journal for the next start,
    /// and later events are refused.
    public nonisolated func stop() {
        buffer.close()
        workerHandle.cancel()
        wake.signal()
        urgent.signal()
    }

    /// Counters readable at any time.
    public nonisolated var counters: TrackingCounters { buffer.counters }

    /// Delivers everything pending now; returns when it is settled or after twice the request
    /// timeout.
    public func flush() async {
        _ = await flush(timeout: options.requestTimeout * 2)
    }

    /// Returns once every event taken before the call is settled (acknowledged by the server,
    /// or refused by it and given up), or when `timeout` has passed: `true` when all settled.
    /// A request on the wire at the deadline is not abandoned: the loop records its outcome.
    public func flush(timeout: Duration) async -> Bool {
        guard let target = buffer.newestOrdinal, !isSettled(through: target) else { return true }
        guard workerHandle.isRunning else { return false }
        cutBackoff = true
        urgent.signal()
        wake.signal()
        let id = nextWaiterId
        nextWaiterId += 1
        let deadline = clock.elapsed + timeout
        let clock = clock
        return await withCheckedContinuation { continuation in
            var waiter = FlushWaiter(id: id, target: target, continuation: continuation)
            waiter.timer = Task { [weak self] in
                guard (try? await clock.sleep(until: deadline)) != nil else { return }
                await self?.expireWaiter(id)
            }
            flushWaiters.append(waiter)
        }
    }

    /// Stops taking events, delivers what is pending (the batch on the wire included) until
    /// `timeout`, then stops the loop; unsent events stay journaled for the next start. A batch
    /// cut off on the wire at the deadline may reach the server and be sent again at the next
    /// start: at most one batch is duplicated.
    public func shutdown(timeout: Duration) async -> TrackingShutdown {
        let sentBefore = buffer.counters.sent
        buffer.close()
        draining = true
        _ = await flush(timeout: timeout)
        workerHandle.cancel()
        wake.signal()
        urgent.signal()
        await workerHandle.finished()
        finishWaiters()
        let counters = buffer.counters
        let journaled = journal == nil ? 0 : buffer.waitingJournaled
            + (units.joined() + sending).filter { $0.sequence != nil }.count
        return TrackingShutdown(delivered: counters.sent - sentBefore, leftPending: counters.pending, journaled: journaled,
                                counters: counters)
    }

    private func expireWaiter(_ id: UInt64) {
        guard let index = flushWaiters.firstIndex(where: { $0.id == id }) else { return }
        flushWaiters.remove(at: index).continuation.resume(returning: false)
    }

    func settleWaiters() {
        guard !flushWaiters.isEmpty else { return }
        var waiting: [FlushWaiter] = []
        for waiter in flushWaiters {
            if isSettled(through: waiter.target) {
                waiter.timer?.cancel()
                waiter.continuation.resume(returning: true)
            } else {
                waiting.append(waiter)
            }
        }
        flushWaiters = waiting
    }

    private func finishWaiters() {
        let waiters = flushWaiters
        flushWaiters.removeAll()
        for waiter in waiters {
            waiter.timer?.cancel()
            waiter.continuation.resume(returning: isSettled(through: waiter.target))
        }
    }

    /// Whether no event with an ordinal up to `target` is waiting or in flight.
    private func isSettled(through target: UInt64) -> Bool {
        if let oldest = buffer.oldestWaitingOrdinal, oldest <= target { return false }
        if sending.contains(where: { $0.ordinal <= target }) { return false }
        if judge.suspects.contains(where: { $0.ordinal <= target }) { return false }
        return !units.contains { unit in unit.contains { $0.ordinal <= target } }
    }

    private var urgentDelivery: Bool { draining || !flushWaiters.isEmpty }

    private func run() async {
        var failures = 0
        var lastStart: Duration?
        while !Task.isCancelled {
            var batch: [Entry]
            if !units.isEmpty {
                batch = units.removeFirst()
            } else {
                guard let firstAt = buffer.firstPendingAt else {
                    settleWaiters()
                    await wake.wait(timeout: nil)
                    continue
                }
                if buffer.count < options.batchSize && !urgentDelivery {
                    let releaseAt = firstAt + options.releaseInterval
                    if clock.elapsed < releaseAt {
                        await wake.wait(until: releaseAt)
                        continue
                    }
                }
                // Paced: the next request gathers what arrives until the interval has passed
                // since the last one began, or a full batch waits.
                if let lastStart, !urgentDelivery, buffer.count < options.maximumBatchEvents {
                    let nextStart = lastStart + options.minimumRequestInterval
                    if clock.elapsed < nextStart {
                        await wake.wait(until: nextStart)
                        continue
                    }
                }
                // More than a batch waiting means deliveries fall behind (a load, a backlog left by
                // failures or recovered from the journal): one request then carries what waits, up
                // to `maximumBatchEvents`, so delivery keeps pace instead of the queue filling.
                let behind = buffer.count > options.batchSize
                batch = buffer.takeBatch(maximum: behind ? options.maximumBatchEvents : options.batchSize)
                if batch.isEmpty { continue }
            }
            // Another process sharing the journal may have forgotten a visitor since.
            batch = dropForgotten(from: batch)
            guard !batch.isEmpty else {
                settleWaiters()
                continue
            }
            sending = batch
            lastStart = clock.elapsed
            let answer = await deliver(batch)
            sending = []
            switch answer {
            case .delivered:
                failures = 0
                // Each suspect is sent once more, alone, first: now the server takes events.
                units.insert(contentsOf: judge.accepted(batch).map { [$0] }, at: 0)
            case .undeliverable:
                break
            case .tooLarge:
                if batch.count > 1 { splitInHalves(batch) }
            case .refused(let reason):
                if refused(batch, reason: reason) {
                    // An outage, not bad data: the events wait and are sent again after a backoff.
                    let delay = failed(retrying: 0, after: nil, failures: &failures)
                    log.warn("tracking: the server refuses every event on its own (\(reason)); "
                             + "keeping them and retrying in \(delay)")
                    await backoff(delay)
                }
            case .retryLater(let after, _):
                // A retry resends the batch as it was: in front, in order, never joined by later events.
                units.insert(batch, at: 0)
                await backoff(failed(retrying: batch.count, after: after, failures: &failures))
            }
            settleWaiters()
        }
        settleWaiters()
    }

    /// Counts a failed attempt (`retrying` events to be sent again) and returns the wait before the
    /// next: the backoff for `failures`, or the receiver's `after` when longer (up to the cap).
    private func failed(retrying: Int, after: Duration?, failures: inout Int) -> Duration {
        buffer.countFailure(retrying: retrying)
        settleWaiters()
        let backoff = options.backoff
        var delay = backoff.delay(attempt: failures)
        if let after { delay = max(delay, min(after, backoff.maximum)) }
        failures += 1
        return delay
    }

    /// Waits `delay`; only a flush or shutdown cuts it short (once per call), never new events.
    private func backoff(_ delay: Duration) async {
        let deadline = clock.elapsed + delay
        while !Task.isCancelled {
            if cutBackoff {
                cutBackoff = false
                return
            }
            guard clock.elapsed < deadline else { return }
            await urgent.wait(until: deadline)
        }
    }

    /// Splits a refused batch, or has ``RefusalJudge`` judge an event refused on its own.
    /// Returns true for an outage: the events are kept behind the other pending batches, and
    /// the caller backs off.
    private func refused(_ batch: [Entry], reason: String) -> Bool {
        judge.refused(batch)
        guard batch.count == 1, let entry = batch.first else {
            splitInHalves(batch)
            return false
        }
        switch judge.judge(entry, nothingElsePending: units.isEmpty && buffer.count == 0) {
        case .bad:
            giveUp(entry, reason: reason)
            return false
        case .suspect:
            return false
        case .outage(let kept):
            units.append(contentsOf: kept.map { [$0] })
            return true
        }
    }

    /// Sends the two halves of `batch` next, in order.
    private func splitInHalves(_ batch: [Entry]) {
        let half = batch.count / 2
        units.insert(contentsOf: [Array(batch[..<half]), Array(batch[half...])], at: 0)
    }

    private func giveUp(_ entry: Entry, reason: String) {
        do {
            try journal?.acknowledge(entry.sequence.map { [$0] } ?? [])
        } catch {
            log.error("tracking journal acknowledgement failed (the refused event may be sent again after a restart): \(error)")
        }
        buffer.settle(rejected: 1)
        if let count = refusals.note(on: clock) {
            log.warn("tracking: the server refused \(count) event(s) on their own (last: \(reason)); given up")
        }
    }

    /// Hands one batch to the delivery and records what its answer settles: an acknowledgement,
    /// or a drop; retries and refusals are the loop's.
    private func deliver(_ batch: [Entry]) async -> TrackingDeliveryAnswer {
        let started = clock.elapsed
        let answer = await delivery.deliver(batch.map(\.event))
        buffer.countRequest(took: clock.elapsed - started)
        switch answer {
        case .delivered:
            do {
                try journal?.acknowledge(batch.compactMap(\.sequence))
            } catch {
                log.error("tracking journal acknowledgement failed (events may be sent again after a restart): \(error)")
            }
            buffer.settle(sent: batch.count)
            log.debug("tracking batch of \(batch.count) event(s) delivered")
            released?(batch.count)
        case .undeliverable(let reason):
            log.error("tracking batch cannot be sent: \(reason); \(batch.count) event(s) dropped")
            drop(batch)
        case .tooLarge(let reason):
            // A batch is split by the loop; an event alone cannot be.
            guard batch.count == 1 else { break }
            log.error("\(reason); dropped")
            drop(batch)
        case .retryLater(_, let reason):
            log.warn("tracking delivery \(reason); \(batch.count) event(s) will be retried")
        case .refused:
            break
        }
        return answer
    }

    /// `batch` without the events the journal says were forgotten since they were written;
    /// those are dropped from the batch, the buffer and the retries, and counted as dropped.
    private func dropForgotten(from batch: [Entry]) -> [Entry] {
        guard let gone = journal?.takeForgotten(), !gone.isEmpty else { return batch }
        let erased = Set(gone)
        let kept = batch.filter { $0.sequence.map { !erased.contains($0) } ?? true }
        var dropped = batch.count - kept.count
        units = units.compactMap { unit in
            let left = unit.filter { $0.sequence.map { !erased.contains($0) } ?? true }
            dropped += unit.count - left.count
            return left.isEmpty ? nil : left
        }
        buffer.settle(dropped: dropped)
        let waiting = buffer.removeWaiting(sequences: erased)
        if dropped + waiting > 0 { log.info("tracking: \(dropped + waiting) event(s) of visitors forgotten by another process dropped") }
        return kept
    }

    /// Gives `batch` up as dropped: acknowledged in the journal, counted.
    private func drop(_ batch: [Entry]) {
        try? journal?.acknowledge(batch.compactMap(\.sequence))
        buffer.settle(dropped: batch.count)
    }
}
