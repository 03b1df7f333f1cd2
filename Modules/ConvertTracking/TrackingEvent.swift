import ConvertVisitor

/// One tracking event for one visitor, as the tracking API receives it.
public struct TrackingEvent: Sendable, Hashable, Codable {
    /// What happened.
    public enum Payload: Sendable, Hashable {
        /// The visitor was bucketed into a variation.
        case bucketing(experienceId: String, variationId: String)
        /// The visitor converted on a goal; `goalData` makes it a transaction.
        case conversion(goalId: String, goalData: [GoalDataItem]?, bucketingData: [String: String]?)
    }

    /// The account and project the event belongs to; a delivery batch never mixes projects.
    public let accountId: String
    /// The project's id.
    public let projectId: String
    /// The visitor the event is about.
    public let visitorId: String
    /// The visitor's report segments at the time, if any.
    public let segments: VisitorSegments?
    /// The bucketing or the conversion.
    public let payload: Payload

    /// An event for one visitor of one project.
    public init(accountId: String, projectId: String, visitorId: String, segments: VisitorSegments?, payload: Payload) {
        self.accountId = accountId
        self.projectId = projectId
        self.visitorId = visitorId
        self.segments = segments
        self.payload = payload
    }

    /// `"bucketing"` or `"conversion"`, the wire `eventType`.
    public var eventType: String {
        switch payload {
        case .bucketing: return "bucketing"
        case .conversion: return "conversion"
        }
    }
}

extension TrackingEvent.Payload: Codable {
    private enum CodingKeys: String, CodingKey {
        case eventType, data
    }

    private enum DataKeys: String, CodingKey {
        case experienceId, variationId, goalId, goalData, bucketingData
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let type = try container.decode(String.self, forKey: .eventType)
        let data = try container.nestedContainer(keyedBy: DataKeys.self, forKey: .data)
        switch type {
        case "bucketing":
            self = .bucketing(experienceId: try data.decode(String.self, forKey: .experienceId),
                              variationId: try data.decode(String.self, forKey: .variationId))
        case "conversion":
            self = .conversion(goalId: try data.decode(String.self, forKey: .goalId),
                               goalData: try data.decodeIfPresent([GoalDataItem].self, forKey: .goalData),
                               bucketingData: try data.decodeIfPresent([String: String].self, forKey: .bucketingData))
        default:
            throw DecodingError.dataCorruptedError(forKey: .eventType, in: container,
                                                   debugDescription: "unknown eventType \(type)")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        var data = container.nestedContainer(keyedBy: DataKeys.self, forKey: .data)
        switch self {
        case .bucketing(let experienceId, let variationId):
            try container.encode("bucketing", forKey: .eventType)
            try data.encode(experienceId, forKey: .experienceId)
            try data.encode(variationId, forKey: .variationId)
        case .conversion(let goalId, let goalData, let bucketingData):
            try container.encode("conversion", forKey: .eventType)
            try data.encode(goalId, forKey: .goalId)
            try data.encodeIfPresent(goalData, forKey: .goalData)
            try data.encodeIfPresent(bucketingData, forKey: .bucketingData)
        }
    }
}

/// Where the SDK hands tracking events: a queue that batches and delivers them.
///
/// Implementation requirements: `enqueue` is called on decision paths from any thread and must
/// return quickly without blocking on the network; it must be safe to call concurrently.
public protocol TrackingSink: Sendable {
    /// Takes one event for delivery.
    func enqueue(_ event: TrackingEvent)
    /// Takes one event for delivery and says whether it was taken: `false` when the sink
    /// refused it (full, or shut down) and it will never be sent.
    func offer(_ event: TrackingEvent) -> Bool
    /// Delivers what is pending now, returning when the attempt is over.
    func flush() async
    /// Returns once every event taken before the call is settled (acknowledged, or given up as
    /// refused by the server), or when `timeout` has passed; `true` when everything settled.
    func flush(timeout: Duration) async -> Bool
    /// Stops taking events, delivers what is pending until `timeout`, keeps the rest for the
    /// next start (when the sink journals), and stops its background work.
    func shutdown(timeout: Duration) async -> TrackingShutdown
    /// Stops background work at once (the owner was released); journaled events wait for the
    /// next start.
    func stop()
    /// What the sink has done so far.
    var counters: TrackingCounters { get }
    /// Drops the events of the visitor `visitorId` of the project not sent yet (a visitor who
    /// asked to be forgotten) and erases its events from the journal; returns how many were
    /// dropped. Events already on their way are not recalled.
    func discardPending(visitorId: String, accountId: String, projectId: String) async -> Int
}

extension TrackingSink {
    /// Sinks that keep no counts report zeros.
    public var counters: TrackingCounters { TrackingCounters() }

    /// Sinks that never refuse take every event.
    public func offer(_ event: TrackingEvent) -> Bool {
        enqueue(event)
        return true
    }

    /// Sinks without a deadline of their own flush once.
    public func flush(timeout: Duration) async -> Bool {
        await flush()
        return true
    }

    /// Sinks without background work flush once. This default cannot stop the sink taking
    /// events afterwards, as the requirement says it must: a sink that can be shut down
    /// implements this itself (`TrackingSinkContract` in ConvertTesting checks it).
    public func shutdown(timeout: Duration) async -> TrackingShutdown {
        let before = counters.sent
        _ = await flush(timeout: timeout)
        let after = counters
        return TrackingShutdown(delivered: after.sent - before, leftPending: after.pending, counters: after)
    }

    /// Sinks without background work have nothing to stop.
    public func stop() {}

    /// Sinks that hold nothing back have nothing to drop.
    public func discardPending(visitorId: String, accountId: String, projectId: String) async -> Int { 0 }
}

/// What ``TrackingSink/shutdown(timeout:)`` did.
public struct TrackingShutdown: Sendable, Hashable, CustomStringConvertible {
    /// Events the server acknowledged during the shutdown.
    public var delivered: Int
    /// Events not settled by the deadline: ``journaled`` of them are sent at the next start,
    /// the rest are lost.
    public var leftPending: Int
    /// Of ``leftPending``, the events kept in a journal for the next start (0 without one:
    /// memory persistence keeps nothing).
    public var journaled: Int
    /// The sink's counters at the end.
    public var counters: TrackingCounters

    /// A report of `delivered` and `leftPending` events, `journaled` of them kept for the next
    /// start, with the sink's `counters`.
    public init(delivered: Int, leftPending: Int, journaled: Int = 0, counters: TrackingCounters) {
        self.delivered = delivered
        self.leftPending = leftPending
        self.journaled = min(journaled, leftPending)
        self.counters = counters
    }

    /// Whether everything pending was settled before the deadline.
    public var drained: Bool { leftPending == 0 }

    /// Events left pending that no journal keeps: lost when the process exits.
    public var lost: Int { leftPending - journaled }

    /// What a shutdown that did not drain loses, and why; `nil` when it drained.
    public var undeliveredSummary: String? {
        guard !drained else { return nil }
        var parts: [String] = []
        if journaled > 0 { parts.append("\(journaled) kept in the journal, sent at the next start") }
        if lost > 0 { parts.append("\(lost) lost (no journal keeps them: memory persistence)") }
        return "\(leftPending) event(s) not delivered before the deadline: " + parts.joined(separator: ", ")
    }

    public var description: String {
        "delivered \(delivered), left pending \(leftPending) (journaled \(journaled)) (\(counters))"
    }
}


/// A sink that drops everything, for builds without tracking.
public struct DiscardingTrackingSink: TrackingSink {
    /// A sink that drops every event.
    public init() {}
    public func enqueue(_ event: TrackingEvent) {}
    public func flush() async {}
}

/// What a tracking sink has done since it started; `enqueued == sent + dropped + rejected + pending`
/// always holds.
public struct TrackingCounters: Sendable, Hashable, CustomStringConvertible {
    /// Events handed to the queue, dropped ones included (plus those recovered from the journal at start).
    public var enqueued = 0
    /// Events the server acknowledged with a 2xx.
    public var sent = 0
    /// Event deliveries attempted again after a failure (an event retried twice counts twice).
    public var retried = 0
    /// Events refused because the queue was at capacity or shut down, and pending events
    /// discarded (their visitor was forgotten).
    public var dropped = 0
    /// Events the server refused on their own (a 4xx other than 408 and 429), given up.
    public var rejected = 0
    /// Events waiting or in flight.
    public var pending = 0
    /// Failed delivery attempts.
    public var failedRequests = 0
    /// Delivery requests made, answered or not.
    public var requests = 0
    /// The time the delivery requests took, all together (``requests`` of them): the mean
    /// delivery latency over a period is the growth of one over the growth of the other.
    public var requestTime: Duration = .zero

    /// All counters at zero.
    public init() {}

    public var description: String {
        "enqueued \(enqueued), sent \(sent), retried \(retried), dropped \(dropped), rejected \(rejected), pending \(pending)"
    }
}
