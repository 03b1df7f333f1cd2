/// How a receiver answered one batch of tracking events, in terms any transport can give.
///
/// The tracking queue acts on these alone: it knows nothing of status codes. Each transport
/// maps its own answers onto them (`HTTPTrackingDelivery.answer(for:)` in ConvertQueue maps
/// HTTP's: 2xx, then 408, 429, 5xx and failed exchanges, then any other status).
public enum TrackingDeliveryAnswer: Sendable, Hashable {
    /// The receiver took every event of the batch: the queue acknowledges them (in its journal
    /// too) and never sends them again.
    case delivered
    /// Nothing was taken, for a reason that is not the batch's (an outage, a timeout, a broken
    /// connection, throttling): the queue sends the same batch again after a backoff, at least
    /// `after` when the receiver asked for it. `reason` completes "tracking delivery …" in the
    /// log (`failed: host unreachable`, `answered HTTP 503`).
    case retryLater(after: Duration?, reason: String)
    /// The receiver refused this batch for what it holds: the queue splits it until the
    /// refused events stand alone, then gives up an event refused on its own while others are
    /// taken, and treats refusals of everything as an outage (see RELIABILITY.md). `reason`
    /// names the answer in the log (`HTTP 400`).
    case refused(reason: String)
    /// The batch is too large for one delivery: the queue sends it in halves; a single event
    /// is dropped and counted. `reason` says so in the log line of a dropped event.
    case tooLarge(reason: String)
    /// These events can never be delivered (they cannot be encoded or addressed): the queue
    /// drops them and counts them in ``TrackingCounters/dropped``.
    case undeliverable(reason: String)
}

/// Carries one batch of tracking events to a receiver and says how it answered: the tracking
/// queue's way out, so batching, the journal, retries and refusal judging serve any transport.
///
/// `TrackingQueue(transport:endpoint:)` delivers over HTTP to Convert's tracking API
/// (`HTTPTrackingDelivery`); pass your own to `TrackingQueue(delivery:)` for another receiver.
///
/// Implementation requirements: the queue calls ``deliver(_:)`` for one batch at a time, never
/// with an empty batch; events of a batch may belong to several visitors but always to one
/// account and project. Do not retry on your own: answer ``TrackingDeliveryAnswer/retryLater(after:reason:)``
/// and the queue keeps order and backs off. Answer within a bounded time (a deadline of your own).
public protocol TrackingDelivery: Sendable {
    /// Sends `events` once and classifies the answer.
    func deliver(_ events: [TrackingEvent]) async -> TrackingDeliveryAnswer
}
