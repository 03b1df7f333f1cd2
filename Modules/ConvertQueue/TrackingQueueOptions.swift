import ConvertEnvironment
import ConvertTransport

/// How the tracking queue batches, bounds and retries.
public struct TrackingQueueOptions: Sendable, Hashable {
    /// Pending events that trigger a delivery at once.
    public var batchSize: Int
    /// How long after the first pending event a delivery happens anyway.
    public var releaseInterval: Duration
    /// The most events one request carries when more than `batchSize` wait (a load the
    /// deliveries fall behind, a backlog left by failures or recovered from the journal);
    /// otherwise a request carries `batchSize`. A process killed mid-request repeats at most
    /// the one request on the wire.
    public var maximumBatchEvents: Int
    /// The least time from one request's start to the next one's while fewer than
    /// `maximumBatchEvents` wait (50 ms by default): under a load, events gather into a few full
    /// requests instead of one small request per round trip. A flush, a shutdown and a retry do
    /// not wait for it; `.zero` sends each batch as soon as it is due.
    public var minimumRequestInterval: Duration
    /// The largest request body: a batch over it is split, and an event over it on its own is
    /// dropped and counted (a runaway goal value must not become a 200 MB POST). Read by
    /// `HTTPTrackingDelivery`, as are `source` and `enrichData`.
    public var maximumBatchBytes: Int
    /// The most events held; past it new events are dropped and counted (see ``TrackingCounters``).
    public var capacity: Int
    /// Backoff after a failed delivery.
    public var retry: RetryPolicy
    /// How long one delivery request may take (10 s by default); a timeout is retried.
    public var requestTimeout: Duration
    /// The `source` field of request bodies.
    public var source: String
    /// The `enrichData` field of request bodies: asks the server to enrich the events (`true` by
    /// default).
    public var enrichData: Bool

    /// Options with the SDK's defaults; sizes below 1 are raised to 1, and `maximumBatchEvents` to
    /// at least `batchSize`.
    public init(batchSize: Int = 10, releaseInterval: Duration = .milliseconds(1000), maximumBatchEvents: Int = 500,
                minimumRequestInterval: Duration = .milliseconds(50), capacity: Int = 100_000,
                retry: RetryPolicy = RetryPolicy(), requestTimeout: Duration = .seconds(10),
                source: String = "ios-sdk", enrichData: Bool = true, maximumBatchBytes: Int = 1 << 20) {
        self.batchSize = max(1, batchSize)
        self.releaseInterval = releaseInterval
        self.maximumBatchEvents = max(self.batchSize, maximumBatchEvents)
        self.minimumRequestInterval = max(.zero, minimumRequestInterval)
        self.capacity = max(1, capacity)
        self.retry = retry
        self.requestTimeout = requestTimeout
        self.source = source
        self.enrichData = enrichData
        self.maximumBatchBytes = max(1_024, maximumBatchBytes)
    }

    /// ``retry`` as the package's backoff: what the queue waits between attempts.
    var backoff: Backoff { retry.backoff }
}
