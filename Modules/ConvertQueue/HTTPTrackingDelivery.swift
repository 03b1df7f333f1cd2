import ConvertEnvironment
import ConvertStorage
import ConvertTracking
import ConvertTransport
import Foundation

/// Delivers tracking batches to Convert's tracking API over an `HTTPTransport`: the body is a
/// ``TrackingBatch``, the URL the ``TrackingEndpoint``'s for the events' project, and the HTTP
/// answer is classified by ``answer(for:)``.
///
/// `TrackingQueue(transport:endpoint:options:)` makes one; make one yourself to wrap it (to
/// count or sample requests, say) and pass it to `TrackingQueue(delivery:options:)`.
package struct HTTPTrackingDelivery: TrackingDelivery {
    /// The client requests go through.
    package let transport: any HTTPTransport
    /// Where batches go.
    package let endpoint: TrackingEndpoint
    /// The `source` field of request bodies.
    package var source: String
    /// The `enrichData` field of request bodies.
    package var enrichData: Bool
    /// The largest request body; a larger batch answers ``TrackingDeliveryAnswer/tooLarge(reason:)``
    /// without being sent.
    package var maximumBatchBytes: Int
    /// How long one request may take.
    package var requestTimeout: Duration

    /// A delivery over `transport` to `endpoint`, with the body fields, size bound and request
    /// timeout of `options`.
    package init(transport: any HTTPTransport, endpoint: TrackingEndpoint, options: TrackingQueueOptions = TrackingQueueOptions()) {
        self.transport = transport
        self.endpoint = endpoint
        source = options.source
        enrichData = options.enrichData
        maximumBatchBytes = options.maximumBatchBytes
        requestTimeout = options.requestTimeout
    }

    /// Posts `events` as one batch (as `ConvertAgent`) and classifies the answer.
    package func deliver(_ events: [TrackingEvent]) async -> TrackingDeliveryAnswer {
        let request: HTTPRequest
        switch self.request(for: events) {
        case .success(let built): request = built
        case .failure(let unsent): return unsent.answer
        }
        do {
            return Self.answer(for: try await transport.sendAsConvertAgent(request))
        } catch {
            return .retryLater(after: nil, reason: "failed: \(error)")
        }
    }

    /// The request carrying `events`, or the answer that stands for it unsent: delivered for no
    /// events, undeliverable when they cannot be encoded or addressed, too large over the bound.
    package func request(for events: [TrackingEvent]) -> Result<HTTPRequest, Unsent> {
        guard let first = events.first else { return .failure(Unsent(answer: .delivered)) }
        let body: Data
        let url: URL
        do {
            body = try TrackingBatch.body(of: events, source: source, enrichData: enrichData)
            url = try endpoint.url(accountId: first.accountId, projectId: first.projectId)
        } catch {
            return .failure(Unsent(answer: .undeliverable(reason: "\(error)")))
        }
        if body.count > maximumBatchBytes {
            let what = events.count == 1 ? "a tracking event" : "a tracking batch of \(events.count) events"
            return .failure(Unsent(answer: .tooLarge(
                reason: "\(what) of \(body.count) bytes is over the \(maximumBatchBytes)-byte request limit")))
        }
        return .success(HTTPRequest(method: .post, url: url, headers: [("Content-Type", "application/json")], body: body,
                                    timeout: requestTimeout))
    }

    /// Why a batch is answered without being sent.
    package struct Unsent: Error {
        /// The answer standing for the delivery.
        package let answer: TrackingDeliveryAnswer
    }

    /// The classes of an HTTP answer: 2xx delivers; 408, 429 and 5xx are retried later
    /// (after `Retry-After` when given); any other status refuses the batch. A request that got
    /// no answer at all (the transport threw) is retried later too.
    package static func answer(for response: HTTPResponse) -> TrackingDeliveryAnswer {
        switch response.status {
        case 200..<300:
            return .delivered
        case 408, 429, 500...:
            return .retryLater(after: response.retryAfter, reason: "answered HTTP \(response.status)")
        default:
            return .refused(reason: "HTTP \(response.status)")
        }
    }
}

extension TrackingQueue {
    /// Creates a queue delivering to Convert's tracking API over `transport` (an
    /// `HTTPTrackingDelivery` to `endpoint`) and starts its delivery loop; recovered journal
    /// entries go first. Intervals and timeouts are measured on `clock`; `released` is told the
    /// size of each batch the server acknowledges.
    public init(transport: any HTTPTransport, endpoint: TrackingEndpoint, options: TrackingQueueOptions = TrackingQueueOptions(),
                journal: (any EventJournal)? = nil, log: SDKLog = .silent, clock: any SleepClock = .continuous,
                released: (@Sendable (Int) -> Void)? = nil) {
        self.init(delivery: HTTPTrackingDelivery(transport: transport, endpoint: endpoint, options: options), options: options,
                  journal: journal, log: log, clock: clock, released: released)
    }
}
