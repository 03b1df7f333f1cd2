import ConvertSynchronization
import ConvertTransport
import Foundation

/// An in-process ``HTTPTransport``: records every request and answers from a closure.
///
/// ```swift
/// let transport = StubTransport { request in HTTPResponse(status: 200) }
/// // … run the SDK on it …
/// #expect(transport.requests.count == 1)
/// ```
///
/// Made without a closure, it answers nothing: every request throws ``Unstubbed`` naming it, so
/// a test never passes on a made-up 200.
public final class StubTransport: HTTPTransport, Sendable {
    private struct State {
        var recorded: [HTTPRequest] = []
        var respond: @Sendable (HTTPRequest) throws -> HTTPResponse
    }

    private let state: Locked<State>

    /// A request nobody stubbed.
    public struct Unstubbed: Error, CustomStringConvertible {
        /// The request that found no stub.
        public let request: HTTPRequest
        public var description: String {
            "StubTransport: no answer stubbed for \(request.method.rawValue) \(request.url.absoluteString)"
        }
    }

    /// Answers every request with `respond`.
    public init(_ respond: @escaping @Sendable (HTTPRequest) throws -> HTTPResponse) {
        state = Locked(State(respond: respond))
    }

    /// Answers nothing until ``setResponder(_:)``: each request throws ``Unstubbed``.
    public convenience init() {
        self.init { request in throw Unstubbed(request: request) }
    }

    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        let respond = state.withValue { state in
            state.recorded.append(request)
            return state.respond
        }
        return try respond(request)
    }

    /// Every request so far, in order.
    public var requests: [HTTPRequest] { state.withValue { $0.recorded } }

    /// Replaces the responder.
    public func setResponder(_ respond: @escaping @Sendable (HTTPRequest) throws -> HTTPResponse) {
        state.withValue { $0.respond = respond }
    }
}
