import ConvertSynchronization
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
/// What a peer sends is bounded as it arrives: an announced `Content-Length` over
/// ``maximumBodyBytes`` fails the request at once, and the (decoded) body is counted chunk by
/// chunk, the request cancelled past the limit. Redirects are followed only within the
/// request's origin (same scheme, host and port): another host — or plain http after https —
/// never sees the request's headers (an SDK key's `Authorization`), and its 3xx answer is
/// returned as it is.
///
/// ```swift
/// let transport = URLSessionTransport(maximumBodyBytes: 5_000_000)
/// ```
public final class URLSessionTransport: HTTPTransport, Sendable {
    private let session: URLSession
    private let delegate: SessionDelegate
    /// Responses with larger bodies are refused with ``TransportError/bodyTooLarge(limit:)``.
    public let maximumBodyBytes: Int
    /// How long a POST may wait without an answer before its connection counts as dead and the
    /// request fails (to be retried); the request's own timeout still bounds the whole exchange.
    public let postAnswerDeadline: Duration

    /// Creates a transport with its own session that keeps nothing: no cookie storage (cookies
    /// a host sets are neither stored nor sent), no URL cache, every request to the network.
    ///
    /// On Linux, Foundation creates the empty directories of its shared cookie storage and URL
    /// cache (`~/.local/share/<the executable's directory name>` and
    /// `~/.cache/org.swift.foundation.URLCache/<executable>`) the first time a process makes any
    /// session configuration, before a setting can be changed; nothing is written in them.
    public init(maximumBodyBytes: Int = 10 * 1024 * 1024, postAnswerDeadline: Duration = .seconds(2)) {
        delegate = SessionDelegate()
        session = URLSession(configuration: Self.configuration(), delegate: delegate, delegateQueue: nil)
        self.maximumBodyBytes = maximumBodyBytes
        self.postAnswerDeadline = postAnswerDeadline
    }

    /// An ephemeral configuration with no cookie storage, no cookie handling and no URL cache.
    private static func configuration() -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        return configuration
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
        let exchange = Exchange(limit: maximumBodyBytes, origin: Origin(request.url))
        let prepared = urlRequest
        let session = self.session
        let delegate = self.delegate
        let deadline = Self.seconds(request.timeout) + 0.25
        // Cancelling a URLSession task synchronously from a Swift task-cancellation handler can
        // deadlock FoundationNetworking on Linux, so every cancel is hopped onto a global queue.
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<HTTPResponse, any Error>) in
                exchange.start(continuation, session: session, delegate: delegate, request: prepared)
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

/// Scheme, host and port: what a redirect must keep to be followed.
private struct Origin: Hashable {
    let scheme: String?
    let host: String?
    let port: Int?

    init(_ url: URL?) {
        scheme = url?.scheme?.lowercased()
        host = url?.host?.lowercased()
        port = url?.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : nil)
    }
}

/// Routes the session's callbacks to the exchange of each task.
private final class SessionDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private let exchanges = Locked<[Int: Exchange]>([:])

    func register(_ exchange: Exchange, for task: URLSessionTask) {
        exchanges.withValue { $0[task.taskIdentifier] = exchange }
    }

    private func exchange(_ task: URLSessionTask) -> Exchange? {
        exchanges.withValue { $0[task.taskIdentifier] }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        // Another origin gets nothing: the 3xx answer itself is returned to the caller.
        completionHandler(exchange(task)?.follows(request) == true ? request : nil)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        guard let exchange = exchange(dataTask), exchange.receive(response) else {
            completionHandler(.cancel)
            return
        }
        completionHandler(.allow)
        exchange.allowed(response)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let exchange = exchange(dataTask), exchange.receive(data) else {
            dataTask.cancel()
            return
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let exchange = exchanges.withValue { $0.removeValue(forKey: task.taskIdentifier) }
        exchange?.complete(error)
    }
}

/// One request's completion: whichever of response, timeout or cancellation comes first wins.
///
/// FoundationNetworking on Linux stops the process when a task is cancelled while it waits for
/// the delegate's answer to a response head or a redirect, a wait it enters before the delegate
/// is called. So an exchange that ends early cancels its task only once the body flows; before
/// that the next callback ends the task (`.cancel`, no redirect), and a peer that never answers
/// is cut by the request's own timeout, which FoundationNetworking counts over the whole exchange.
private final class Exchange: Sendable {
    private struct State {
        var continuation: CheckedContinuation<HTTPResponse, any Error>?
        var task: URLSessionDataTask?
        /// A cancellation that arrived before the exchange started.
        var early: (any Error)?
        var done = false
        /// A final response was allowed: cancelling the task is safe from now on.
        var flowing = false
        /// The exchange failed before the body flowed: the task is cancelled once it does.
        var cancelOwed = false
        var response: HTTPURLResponse?
        var body = Data()
    }

    private let state = Locked(State())
    private let limit: Int
    let origin: Origin

    init(limit: Int, origin: Origin) {
        self.limit = limit
        self.origin = origin
    }

    func start(_ continuation: CheckedContinuation<HTTPResponse, any Error>, session: URLSession, delegate: SessionDelegate,
               request: URLRequest) {
        let task = session.dataTask(with: request)
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
        delegate.register(self, for: task)
        task.resume()
    }

    /// Whether a redirect to `request` is followed: within the origin, while the exchange lasts.
    func follows(_ request: URLRequest) -> Bool {
        Origin(request.url) == origin && !state.withValue { $0.done }
    }

    /// Takes the response head; `false` (and the request failed) when it announces a body over
    /// the limit or is not HTTP.
    func receive(_ response: URLResponse) -> Bool {
        guard !state.withValue({ $0.done }) else { return false }
        guard let http = response as? HTTPURLResponse else {
            finish(.failure(TransportError.unreachable("not an HTTP response")))
            return false
        }
        if http.expectedContentLength > Int64(limit) {
            finish(.failure(TransportError.bodyTooLarge(limit: limit)))
            return false
        }
        state.withValue {
            $0.response = http
            $0.body = Data()
        }
        return true
    }

    /// Counts a chunk of the body as it arrives; past the limit the request fails at once.
    /// Returns whether more is wanted (`false` once the exchange has ended).
    func receive(_ data: Data) -> Bool {
        let (over, ended) = state.withValue { state -> (Bool, Bool) in
            guard !state.done else { return (false, true) }
            guard state.body.count + data.count <= limit else { return (true, true) }
            state.body.append(data)
            return (false, false)
        }
        if over { finish(.failure(TransportError.bodyTooLarge(limit: limit))) }
        return !ended
    }

    func complete(_ error: (any Error)?) {
        state.withValue { $0.task = nil }
        if let error {
            finish(.failure(Self.map(error)))
            return
        }
        let (response, body) = state.withValue { ($0.response, $0.body) }
        guard let http = response else {
            finish(.failure(TransportError.unreachable("no response")))
            return
        }
        var headers: [String: String] = [:]
        for (key, value) in http.allHeaderFields {
            if let key = key as? String, let value = value as? String { headers[key] = value }
        }
        finish(.success(HTTPResponse(status: http.statusCode, headers: headers, body: body)))
    }

    /// Called once the delegate has allowed `response`: a final response's body now flows, and a
    /// cancel owed since the exchange failed is paid.
    func allowed(_ response: URLResponse) {
        if let status = (response as? HTTPURLResponse)?.statusCode, (300..<400).contains(status) { return }
        let owed: URLSessionDataTask? = state.withValue { state in
            state.flowing = true
            return state.cancelOwed ? state.task : nil
        }
        if let owed { Self.cancel(owed) }
    }

    func finish(_ result: Result<HTTPResponse, any Error>) {
        let (continuation, task): (CheckedContinuation<HTTPResponse, any Error>?, URLSessionDataTask?) = state.withValue { state in
            defer {
                state.continuation = nil
                if state.done { state.body = Data() }
            }
            if state.continuation == nil, !state.done, case .failure(let error) = result { state.early = error }
            guard let continuation = state.continuation else { return (nil, nil) }
            state.done = true
            guard case .failure = result else { return (continuation, nil) }
            if state.flowing { return (continuation, state.task) }
            state.cancelOwed = true
            return (continuation, nil)
        }
        guard let continuation else { return }
        continuation.resume(with: result)
        if let task { Self.cancel(task) }
    }

    /// Off the caller's thread: from a delegate callback or a cancellation handler, a synchronous
    /// cancel can be deferred or deadlock FoundationNetworking on Linux.
    private static func cancel(_ task: URLSessionDataTask) {
        DispatchQueue.global().async { task.cancel() }
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
