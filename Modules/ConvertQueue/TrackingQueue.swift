import ConvertEvents
import ConvertStorage
import ConvertSupport
import ConvertTransport
import Foundation

/// Batches tracking events and delivers them to the tracking API, losing none.
///
/// `enqueue` is synchronous and cheap: it journals the event (when a journal is given) and
/// appends it to a bounded buffer. A single delivery loop on the actor sends a batch when
/// `batchSize` events are pending or `releaseInterval` after the first pending one. A failed
/// batch goes back to the front in order and is retried with exponential backoff and jitter;
/// events enqueued meanwhile wait behind it. A 2xx acknowledges the batch in the journal and
/// fires `api.queue.released`. At start, events left in the journal are delivered first.
///
/// Drop policy: when `capacity` events are pending, new events are refused, counted in
/// ``TrackingCounters/dropped`` and logged; pending events are never evicted.
public actor TrackingQueue: TrackingSink {
    struct Entry {
        let sequence: UInt64?
        let event: TrackingEvent
    }

    nonisolated let buffer: PendingBuffer
    private let transport: any HTTPTransport
    private let endpoint: TrackingEndpoint
    private let options: TrackingQueueOptions
    private let journal: (any EventJournal)?
    private let events: SystemEventHub?
    private let log: SDKLog
    private let wake = WakeSignal()
    private var flushWaiters: [CheckedContinuation<Void, Never>] = []
    private var flushRequested = false
    private var worker: Task<Void, Never>?

    /// Creates a queue and starts its delivery loop; recovered journal entries go first.
    public init(transport: any HTTPTransport, endpoint: TrackingEndpoint, options: TrackingQueueOptions = TrackingQueueOptions(),
                journal: (any EventJournal)? = nil, events: SystemEventHub? = nil, log: SDKLog = .silent) {
        self.transport = transport
        self.endpoint = endpoint
        self.options = options
        self.journal = journal
        self.events = events
        self.log = log
        buffer = PendingBuffer(capacity: options.capacity)
        if let journal {
            do {
                let decoder = JSONDecoder()
                var recovered: [Entry] = []
                for record in try journal.pending() {
                    if let event = try? decoder.decode(TrackingEvent.self, from: record.payload) {
                        recovered.append(Entry(sequence: record.sequence, event: event))
                    } else {
                        log.warn("tracking journal: record \(record.sequence) unreadable, dropped")
                        try? journal.acknowledge([record.sequence])
                    }
                }
                if !recovered.isEmpty { log.info("tracking queue: \(recovered.count) journaled event(s) recovered") }
                buffer.recover(recovered)
            } catch {
                log.error("tracking journal unreadable: \(error)")
            }
        }
        Task { await self.start() }
    }

    private func start() {
        guard worker == nil else { return }
        worker = Task { await self.run() }
        if buffer.count > 0 { wake.signal() }
    }

    /// Stops the delivery loop; pending events stay in the journal for the next start.
    public func stop() {
        worker?.cancel()
        worker = nil
        wake.signal()
    }

    /// Counters readable at any time.
    public nonisolated var counters: TrackingCounters { buffer.counters }

    /// Journals `event` (when there is a journal) and queues it; never waits for the network.
    public nonisolated func enqueue(_ event: TrackingEvent) {
        var sequence: UInt64?
        if let journal {
            guard buffer.hasRoom else {
                buffer.countDrop()
                log.warn("tracking queue full (\(options.capacity)); event dropped")
                return
            }
            do {
                sequence = try journal.append(try JSONEncoder().encode(event))
            } catch {
                log.error("tracking journal append failed, event kept in memory only: \(error)")
            }
        }
        switch buffer.append(Entry(sequence: sequence, event: event), batchSize: options.batchSize) {
        case .dropped:
            log.warn("tracking queue full (\(options.capacity)); event dropped")
        case .wakeNow, .first:
            wake.signal()
        case .queued:
            break
        }
    }

    /// Delivers everything pending now, returning after the attempt (successful or not).
    public func flush() async {
        guard buffer.count > 0 else { return }
        flushRequested = true
        await withCheckedContinuation { continuation in
            flushWaiters.append(continuation)
            wake.signal()
        }
    }

    private func finishFlush() {
        flushRequested = false
        let waiters = flushWaiters
        flushWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
    }

    private func run() async {
        var attempt = 0
        while !Task.isCancelled {
            guard let firstAt = buffer.firstPendingAt else {
                finishFlush()
                await wake.wait(timeout: nil)
                continue
            }
            if buffer.count < options.batchSize && !flushRequested {
                let age = ContinuousClock.now - firstAt
                if age < options.releaseInterval {
                    await wake.wait(timeout: options.releaseInterval - age)
                    continue
                }
            }
            let batch = buffer.takeBatch(maximum: options.maximumBatchEvents)
            if batch.isEmpty { continue }
            if await deliver(batch) {
                attempt = 0
            } else {
                buffer.restoreFront(batch)
                if flushRequested { finishFlush() }
                let delay = options.retry.delay(attempt: attempt)
                attempt += 1
                await wake.wait(timeout: delay)
            }
        }
        finishFlush()
    }

    /// Sends one batch; true when the server acknowledged it.
    private func deliver(_ batch: [Entry]) async -> Bool {
        let events = batch.map(\.event)
        let body: Data
        let url: URL
        do {
            body = try TrackingBatch(events: events, source: options.source, enrichData: options.enrichData).encoded()
            url = try endpoint.url(accountId: events[0].accountId, projectId: events[0].projectId)
        } catch {
            log.error("tracking batch cannot be sent: \(error); \(batch.count) event(s) dropped")
            try? journal?.acknowledge(batch.compactMap(\.sequence))
            buffer.completeDropped(batch.count)
            return true
        }
        let request = HTTPRequest(method: .post, url: url, headers: [("Content-Type", "application/json")], body: body,
                                  timeout: options.requestTimeout)
        do {
            let response = try await transport.sendAsConvertAgent(request)
            guard response.isSuccess else {
                log.warn("tracking delivery refused with HTTP \(response.status); \(batch.count) event(s) will be retried")
                buffer.countFailure(retrying: batch.count)
                return false
            }
        } catch {
            log.warn("tracking delivery failed: \(error); \(batch.count) event(s) will be retried")
            buffer.countFailure(retrying: batch.count)
            return false
        }
        do {
            try journal?.acknowledge(batch.compactMap(\.sequence))
        } catch {
            log.error("tracking journal acknowledgement failed (events may be sent again after a restart): \(error)")
        }
        buffer.completeSent(batch.count)
        log.debug("tracking batch of \(batch.count) event(s) delivered")
        self.events?.fire(.apiQueueReleased, .apiQueueReleased(ApiQueueReleasedPayload(eventCount: batch.count)))
        return true
    }
}

/// Where tracking batches go: `{endpoint with [project_id] replaced}/track/{sdkKey}`.
///
/// Without an SDK key (an SDK started from config data alone) the path ends with
/// `{accountId}/{projectId}` of the events, as Convert's JavaScript SDK sends it.
public struct TrackingEndpoint: Sendable, Hashable {
    /// The endpoint with `[project_id]` in it.
    public let template: String
    /// The SDK key the path ends with; empty for `{accountId}/{projectId}`.
    public let sdkKey: String
    /// Which schemes are allowed.
    public let policy: EndpointPolicy

    /// An endpoint for one SDK key.
    public init(template: String, sdkKey: String, policy: EndpointPolicy = EndpointPolicy()) {
        self.template = template
        self.sdkKey = sdkKey
        self.policy = policy
    }

    /// The URL for a project's batches; throws when the scheme is not allowed.
    public func url(projectId: String) throws -> URL {
        try url(accountId: "", projectId: projectId)
    }

    /// The URL for the batches of an account's project; throws when the scheme is not allowed.
    public func url(accountId: String, projectId: String) throws -> URL {
        var base = template.replacingOccurrences(of: "[project_id]", with: projectId)
        while base.hasSuffix("/") { base.removeLast() }
        let key = hasSDKKey ? sdkKey : accountId + "/" + projectId
        let encoded = key.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "?#"))) ?? key
        return try policy.url("\(base)/track/\(encoded)")
    }

    /// Whether an SDK key was given (not empty or white space).
    public var hasSDKKey: Bool { !sdkKey.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty }
}
