import AsyncHTTPClient
import ConvertTransport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// ``HTTPTransport`` over AsyncHTTPClient: config fetches and tracking batches on SwiftNIO event
/// loops (those of the server it runs in, when given), on kept-alive connections.
///
/// What a peer sends is bounded as it arrives: an announced `Content-Length` over
/// ``maximumBodyBytes`` fails the request at once, and the body is counted chunk by chunk, the
/// request failed past the limit. A POST (a tracking batch) left without an answer for
/// ``postAnswerDeadline`` (2 s by default) fails as a dead connection, to be retried. The
/// request's own timeout bounds the exchange up to the response head; the body's chunks are
/// taken until it passes, and a peer silent for ``idleTimeout`` fails the request, so a body
/// ends within the timeout and one idle timeout. Redirects are not followed: a 3xx answer comes
/// back as it is, so no other host ever sees a request's headers. Nothing is sent twice by the
/// transport itself.
///
/// The transport owns its `HTTPClient`: call ``shutdown()`` once the SDK has shut down (after
/// its last flush).
///
/// ```swift
/// let transport = AsyncHTTPClientTransport(eventLoopGroup: app.eventLoopGroup)
/// let ports = ConvertPorts.live(configuration, transport: transport)
/// ```
public final class AsyncHTTPClientTransport: HTTPTransport {
    /// Responses with larger bodies are refused with ``TransportError/bodyTooLarge(limit:)``.
    public let maximumBodyBytes: Int
    /// How long a POST may take before its answer comes; the request's own timeout still bounds
    /// it when shorter.
    public let postAnswerDeadline: Duration
    /// How long any request may go without receiving a byte once it is sent.
    public let idleTimeout: Duration
    private let client: HTTPClient

    /// A transport with a client of its own on `eventLoopGroup` (NIO's shared group by default).
    public init(eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
                maximumBodyBytes: Int = 10 * 1024 * 1024, postAnswerDeadline: Duration = .seconds(2),
                idleTimeout: Duration = .seconds(10)) {
        self.maximumBodyBytes = maximumBodyBytes
        self.postAnswerDeadline = postAnswerDeadline
        self.idleTimeout = idleTimeout
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow,
                                                     timeout: .init(connect: .seconds(10), read: .init(idleTimeout)),
                                                     decompression: .disabled)
        configuration.connectionPool.idleTimeout = .seconds(30)
        client = HTTPClient(eventLoopGroup: eventLoopGroup, configuration: configuration)
    }

    /// Closes the client's connections; requests made afterwards fail.
    public func shutdown() async throws {
        try await client.shutdown()
    }

    /// Performs one exchange; a non-2xx answer is a response, not an error.
    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        var outgoing = HTTPClientRequest(url: request.url.absoluteString)
        outgoing.method = request.method == .post ? .POST : .GET
        for (name, value) in request.headers { outgoing.headers.add(name: name, value: value) }
        if let body = request.body { outgoing.body = .bytes(ByteBuffer(bytes: body)) }
        let deadline = ContinuousClock.now + request.timeout
        let untilHead = request.method == .post ? min(request.timeout, postAnswerDeadline) : request.timeout
        do {
            let response = try await client.execute(outgoing, deadline: .now() + .init(untilHead))
            if let announced = response.headers.first(name: "Content-Length").flatMap(Int.init), announced > maximumBodyBytes {
                throw TransportError.bodyTooLarge(limit: maximumBodyBytes)
            }
            var body = ByteBuffer()
            for try await chunk in response.body {
                guard body.readableBytes + chunk.readableBytes <= maximumBodyBytes else {
                    throw TransportError.bodyTooLarge(limit: maximumBodyBytes)
                }
                guard ContinuousClock.now < deadline else { throw TransportError.timedOut }
                var chunk = chunk
                body.writeBuffer(&chunk)
            }
            var headers: [String: String] = [:]
            for (name, value) in response.headers where headers[name.lowercased()] == nil { headers[name.lowercased()] = value }
            return HTTPResponse(status: Int(response.status.code), headers: headers, body: Data(body.readableBytesView))
        } catch let error as TransportError {
            throw error
        } catch {
            throw Self.transportError(error)
        }
    }

    /// AsyncHTTPClient's errors as the SDK's: timeouts, cancellations, and the rest as an
    /// unreachable host.
    static func transportError(_ error: any Error) -> TransportError {
        if error is CancellationError { return .cancelled }
        if let client = error as? HTTPClientError {
            switch client {
            case .deadlineExceeded, .readTimeout, .connectTimeout, .writeTimeout, .getConnectionFromPoolTimeout,
                 .tlsHandshakeTimeout:
                return .timedOut
            case .cancelled: return .cancelled
            default: return .unreachable("\(client)")
            }
        }
        return .unreachable("\(error)")
    }
}

extension TimeAmount {
    /// `duration`, to the nanosecond; a negative one is zero, and one past NIO's range (292
    /// years) is its largest.
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else {
            self = .zero
            return
        }
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        self = overflow ? .nanoseconds(.max) : .nanoseconds(whole &+ attoseconds / 1_000_000_000)
    }
}
