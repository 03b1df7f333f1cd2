import ConvertModel

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
    public let projectId: String
    public let visitorId: String
    /// The visitor's report segments at the time, if any.
    public let segments: VisitorSegments?
    public let payload: Payload

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
    /// Delivers what is pending now, returning when the attempt is over.
    func flush() async
    /// What the sink has done so far.
    var counters: TrackingCounters { get }
}

extension TrackingSink {
    /// Sinks that keep no counts report zeros.
    public var counters: TrackingCounters { TrackingCounters() }
}


/// A sink that drops everything, for builds without tracking.
public struct DiscardingTrackingSink: TrackingSink {
    public init() {}
    public func enqueue(_ event: TrackingEvent) {}
    public func flush() async {}
}

/// What a tracking sink has done since it started; `enqueued == sent + dropped + pending` always holds.
public struct TrackingCounters: Sendable, Hashable, CustomStringConvertible {
    /// Events handed to the queue, dropped ones included (plus those recovered from the journal at start).
    public var enqueued = 0
    /// Events the server acknowledged with a 2xx.
    public var sent = 0
    /// Event deliveries attempted again after a failure (an event retried twice counts twice).
    public var retried = 0
    /// Events refused because the queue was at capacity.
    public var dropped = 0
    /// Events waiting or in flight.
    public var pending = 0
    /// Failed delivery attempts.
    public var failedRequests = 0

    public init() {}

    public var description: String {
        "enqueued \(enqueued), sent \(sent), retried \(retried), dropped \(dropped), pending \(pending)"
    }
}
