import ConvertSupport
import ConvertTransport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// ``HTTPTransport`` over `URLSession` (FoundationNetworking on Linux).
///
/// POST requests (tracking batches) go on a fresh connection each (`Connection: close`), so a
/// dropped connection fails at once instead of after the request timeout, and the transport
/// never re-sends a body on its own; a POST left unanswered for ``postAnswerDeadline`` (2 s by
/// default) fails as a dead connection. Config GETs keep connections alive.
///
/// ```swift
/// let transport = URLSessionTransport(maximumBodyBytes: 5_000_000)
/// ```
public final class URLSessionTransport: HTTPTransport, Sendable {
    private let session: URLSession
    /// Responses with larger bodies are refused with ``TransportError/bodyTooLarge(limit:)``.
    public let maximumBodyBytes: Int
    /// How long a POST may wait without an answer before its connection counts as dead and the
    /// request fails (to be retried); the request's own timeout still bounds the whole exchange.
    public let postAnswerDeadline: Duration

    /// Creates a transport with its own ephemeral session (no cookies, no URL cache).
    public init(maximumBodyBytes: Int = 10 * 1024 * 1024, postAnswerDeadline: Duration = .seconds(2)) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        session = URLSession(configuration: configuration)
        self.maximumBodyBytes = maximumBodyBytes
        self.postAnswerDeadline = postAnswerDeadline
    }

    deinit {
        session.finishTasksAndInvalidate()
    }

    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method.rawValue
        // Tracking answers are a few bytes within milliseconds: past the POST deadline the
        // connection is taken for dead rather than waited on for the whole request timeout.
        let quiet = request.method == .post ? min(request.timeout, postAnswerDeadline) : request.timeout
        // FoundationNetworking on Linux reads a sub-second interval as "already expired"; the
        // exchange's own deadline below keeps shorter timeouts exact.
        urlRequest.timeoutInterval = max(1, Self.seconds(quiet))
        for (name, value) in request.headers {
            urlRequest.setValue(value, forHTTPHeaderField: name)
        }
        // A POST never rides a reused connection: on Linux, a kept-alive connection the server
        // has dropped costs the whole timeout, and libcurl may send the body again by itself.
        if request.method == .post, request.header("Connection") == nil {
            urlRequest.setValue("close", forHTTPHeaderField: "Connection")
        }
        urlRequest.httpBody = request.body
        let exchange = Exchange(limit: maximumBodyBytes)
        let prepared = urlRequest
        let session = self.session
        let deadline = Self.seconds(request.timeout) + 0.25
        // Cancelling a URLSession task synchronously from a Swift task-cancellation handler can
        // deadlock FoundationNetworking on Linux, so every cancel is hopped onto a global queue.
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<HTTPResponse, any Error>) in
                exchange.start(continuation, session: session, request: prepared)
                DispatchQueue.global().asyncAfter(deadline: .now() + deadline) {
                    exchange.finish(.failure(TransportError.timedOut))
                }
            }
        } onCancel: {
            DispatchQueue.global().async { exchange.finish(.failure(TransportError.cancelled)) }
        }
    }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}

/// One request's completion: whichever of response, timeout or cancellation comes first wins.
private final class Exchange: Sendable {
    private struct State {
        var continuation: CheckedContinuation<HTTPResponse, any Error>?
        var task: URLSessionDataTask?
        /// A cancellation that arrived before the exchange started.
        var early: (any Error)?
        var done = false
    }

    private let state = Locked(State())
    private let limit: Int

    init(limit: Int) { self.limit = limit }

    func start(_ continuation: CheckedContinuation<HTTPResponse, any Error>, session: URLSession, request: URLRequest) {
        let limit = self.limit
        let task = session.dataTask(with: request) { [self] data, response, error in
            if let error {
                finish(.failure(Self.map(error)))
                return
            }
            guard let http = response as? HTTPURLResponse else {
                finish(.failure(TransportError.unreachable("not an HTTP response")))
                return
            }
            let body = data ?? Data()
            guard body.count <= limit else {
                finish(.failure(TransportError.bodyTooLarge(limit: limit)))
                return
            }
            var headers: [String: String] = [:]
            for (key, value) in http.allHeaderFields {
                if let key = key as? String, let value = value as? String { headers[key] = value }
            }
            finish(.success(HTTPResponse(status: http.statusCode, headers: headers, body: body)))
        }
        let early: (any Error)? = state.withValue { state in
            if let early = state.early {
                state.done = true
                return early
            }
            state.continuation = continuation
            state.task = task
            return nil
        }
        if let early {
            continuation.resume(throwing: early)
            return
        }
        task.resume()
    }

    func finish(_ result: Result<HTTPResponse, any Error>) {
        let (continuation, task): (CheckedContinuation<HTTPResponse, any Error>?, URLSessionDataTask?) = state.withValue { state in
            defer {
                state.continuation = nil
                state.task = nil
            }
            if state.continuation == nil, !state.done, case .failure(let error) = result { state.early = error }
            if state.continuation != nil { state.done = true }
            return (state.continuation, state.task)
        }
        guard let continuation else { return }
        continuation.resume(with: result)
        if case .failure = result { task?.cancel() }
    }

    private static func map(_ error: any Error) -> TransportError {
        guard let error = error as? URLError else { return .unreachable("\(error)") }
        switch error.code {
        case .timedOut: return .timedOut
        case .cancelled: return .cancelled
        default: return .unreachable(error.localizedDescription)
        }
    }
}
