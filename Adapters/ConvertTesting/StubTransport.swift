import ConvertTransport
import Foundation

/// An in-process ``HTTPTransport``: records every request and answers from a closure.
///
/// ```swift
/// let transport = StubTransport { request in HTTPResponse(status: 200) }
/// // … run the SDK on it …
/// #expect(transport.requests.count == 1)
/// ```
public final class StubTransport: HTTPTransport, @unchecked Sendable {
    // `recorded` and `respond` are guarded by `lock`.
    private let lock = NSLock()
    private var recorded: [HTTPRequest] = []
    private var respond: @Sendable (HTTPRequest) throws -> HTTPResponse

    /// Answers every request with `respond` (200 with an empty body by default).
    public init(_ respond: @escaping @Sendable (HTTPRequest) throws -> HTTPResponse = { _ in HTTPResponse(status: 200) }) {
        self.respond = respond
    }

    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        let respond = lock.withLock {
            recorded.append(request)
            return self.respond
        }
        return try respond(request)
    }

    /// Every request so far, in order.
    public var requests: [HTTPRequest] { lock.withLock { recorded } }

    /// Replaces the responder.
    public func setResponder(_ respond: @escaping @Sendable (HTTPRequest) throws -> HTTPResponse) {
        lock.withLock { self.respond = respond }
    }
}
