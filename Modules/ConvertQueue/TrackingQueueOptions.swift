import ConvertTransport

/// How the tracking queue batches, bounds and retries.
public struct TrackingQueueOptions: Sendable, Hashable {
    /// Pending events that trigger a delivery at once.
    public var batchSize: Int
    /// How long after the first pending event a delivery happens anyway.
    public var releaseInterval: Duration
    /// The most events one request carries when a backlog drains.
    public var maximumBatchEvents: Int
    /// The most events held; past it new events are dropped and counted (see ``QueueCounters``).
    public var capacity: Int
    /// Backoff after a failed delivery.
    public var retry: RetryPolicy
    public var requestTimeout: Duration
    /// The `source` field of request bodies.
    public var source: String
    public var enrichData: Bool

    public init(batchSize: Int = 10, releaseInterval: Duration = .milliseconds(1000), maximumBatchEvents: Int = 500,
                capacity: Int = 100_000, retry: RetryPolicy = RetryPolicy(), requestTimeout: Duration = .seconds(10),
                source: String = "ios-sdk", enrichData: Bool = true) {
        self.batchSize = max(1, batchSize)
        self.releaseInterval = releaseInterval
        self.maximumBatchEvents = max(self.batchSize, maximumBatchEvents)
        self.capacity = max(1, capacity)
        self.retry = retry
        self.requestTimeout = requestTimeout
        self.source = source
        self.enrichData = enrichData
    }
}

/// What the queue has done since it started; `enqueued == sent + dropped + pending` always holds.
public struct QueueCounters: Sendable, Hashable, CustomStringConvertible {
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
