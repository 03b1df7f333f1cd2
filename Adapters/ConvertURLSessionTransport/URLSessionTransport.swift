import ConvertTransport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// ``HTTPTransport`` over `URLSession` (FoundationNetworking on Linux).
///
/// ```swift
/// let transport = URLSessionTransport(maximumBodyBytes: 5_000_000)
/// ```
public final class URLSessionTransport: HTTPTransport, Sendable {
    private let session: URLSession
    /// Responses with larger bodies are refused with ``TransportError/bodyTooLarge(limit:)``.
    public let maximumBodyBytes: Int

    /// Creates a transport with its own ephemeral session (no cookies, no URL cache).
    public init(maximumBodyBytes: Int = 10 * 1024 * 1024) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        session = URLSession(configuration: configuration)
        self.maximumBodyBytes = maximumBodyBytes
    }

    deinit {
        session.finishTasksAndInvalidate()
    }

    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method.rawValue
        urlRequest.timeoutInterval = Self.seconds(request.timeout)
        for (name, value) in request.headers {
            urlRequest.setValue(value, forHTTPHeaderField: name)
        }
        urlRequest.httpBody = request.body
        let prepared = urlRequest
        let limit = maximumBodyBytes
        let session = self.session
        return try await withThrowingTaskGroup(of: HTTPResponse.self) { group in
            group.addTask {
                let (data, response): (Data, URLResponse)
                do {
                    (data, response) = try await session.data(for: prepared)
                } catch let error as URLError {
                    throw Self.map(error)
                } catch is CancellationError {
                    throw TransportError.cancelled
                } catch {
                    throw TransportError.unreachable("\(error)")
                }
                guard let http = response as? HTTPURLResponse else {
                    throw TransportError.unreachable("not an HTTP response")
                }
                guard data.count <= limit else { throw TransportError.bodyTooLarge(limit: limit) }
                var headers: [String: String] = [:]
                for (key, value) in http.allHeaderFields {
                    if let key = key as? String, let value = value as? String { headers[key] = value }
                }
                return HTTPResponse(status: http.statusCode, headers: headers, body: data)
            }
            group.addTask {
                try await Task.sleep(for: request.timeout + .milliseconds(250))
                throw TransportError.timedOut
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw TransportError.cancelled }
            return first
        }
    }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }

    private static func map(_ error: URLError) -> TransportError {
        switch error.code {
        case .timedOut: return .timedOut
        case .cancelled: return .cancelled
        default: return .unreachable(error.localizedDescription)
        }
    }
}
