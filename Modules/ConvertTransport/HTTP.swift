import Foundation

/// An HTTP request as the SDK builds it; no URLSession types, so any client can carry it.
public struct HTTPRequest: Sendable, Hashable {
    /// The methods the SDK uses: `GET` for configs, `POST` for tracking.
    public enum Method: String, Sendable, Hashable {
        /// `GET` and `POST`, spelled as on the wire by their raw values.
        case get = "GET", post = "POST"
    }

    /// `GET` or `POST`.
    public var method: Method
    /// The absolute URL, query included; an ``EndpointPolicy`` has checked its scheme.
    public var url: URL
    /// Header fields in order; names compare case-insensitively.
    public var headers: [(name: String, value: String)]
    /// The request body (JSON for tracking); `nil` for none.
    public var body: Data?
    /// How long the whole exchange may take.
    public var timeout: Duration

    /// A request; the timeout defaults to 10 seconds.
    public init(method: Method, url: URL, headers: [(name: String, value: String)] = [], body: Data? = nil,
                timeout: Duration = .seconds(10)) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }

    /// The value of the first header named `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// Sets `name` to `value`, replacing every existing field of that name.
    package mutating func setHeader(_ name: String, _ value: String) {
        headers.removeAll { $0.name.caseInsensitiveCompare(name) == .orderedSame }
        headers.append((name, value))
    }

    public static func == (lhs: HTTPRequest, rhs: HTTPRequest) -> Bool {
        lhs.method == rhs.method && lhs.url == rhs.url && lhs.body == rhs.body && lhs.timeout == rhs.timeout
            && lhs.headers.elementsEqual(rhs.headers) { $0.name == $1.name && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(method)
        hasher.combine(url)
        hasher.combine(body)
    }
}

extension HTTPRequest: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Header names whose values are credentials, shown as `<redacted>`.
    static let credentialHeaders: Set<String> = ["authorization", "proxy-authorization", "cookie"]

    /// The headers as logs and `dump` show them: credentials redacted.
    package var redactedHeaders: [(name: String, value: String)] {
        headers.map { (name: $0.name, value: Self.credentialHeaders.contains($0.name.lowercased()) ? "<redacted>" : $0.value) }
    }

    /// Method, URL, headers (credentials redacted) and body size.
    public var description: String {
        let fields = redactedHeaders.map { "\($0.name): \($0.value)" }.joined(separator: ", ")
        return "\(method.rawValue) \(url.absoluteString) [\(fields)] body: \(body?.count ?? 0) bytes"
    }

    /// The same redacted text as ``description``.
    public var debugDescription: String { description }

    /// What `dump` shows: method, URL, redacted headers, body size and timeout.
    public var customMirror: Mirror {
        Mirror(self, children: ["method": method, "url": url, "headers": redactedHeaders.map { "\($0.name): \($0.value)" },
                                "bodyBytes": body?.count ?? 0, "timeout": timeout], displayStyle: .struct)
    }
}

/// An HTTP response.
public struct HTTPResponse: Sendable, Hashable {
    /// The HTTP status code; any status is a response, not an error.
    public let status: Int
    /// Header fields with lowercased names.
    public let headers: [String: String]
    /// The response body, empty when there was none.
    public let body: Data

    /// A response; header names are lowercased here (the first of two names differing in case
    /// wins).
    public init(status: Int, headers: [String: String] = [:], body: Data = Data()) {
        self.status = status
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
        self.body = body
    }

    /// The value of header `name` (case-insensitive).
    public func header(_ name: String) -> String? { headers[name.lowercased()] }

    /// Whether the status is 2xx.
    package var isSuccess: Bool { (200..<300).contains(status) }

    /// `Retry-After` in seconds, when the answer has a usable one (the HTTP-date form is not
    /// used by Convert's hosts).
    package var retryAfter: Duration? {
        header("Retry-After").flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }.flatMap { $0 >= 0 ? .seconds($0) : nil }
    }
}

/// Why an exchange produced no response.
public enum TransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The host could not be reached or the connection broke.
    case unreachable(String)
    /// No complete response within the timeout.
    case timedOut
    /// The response body exceeded the allowed size.
    case bodyTooLarge(limit: Int)
    /// The request was cancelled.
    case cancelled
    /// The URL is not allowed (for example plain `http` without an explicit allowance).
    case refused(String)

    public var description: String {
        switch self {
        case .unreachable(let why): return "host unreachable: \(why)"
        case .timedOut: return "request timed out"
        case .bodyTooLarge(let limit): return "response body larger than \(limit) bytes"
        case .cancelled: return "request cancelled"
        case .refused(let why): return "request refused: \(why)"
        }
    }
}

/// Sends HTTP requests: URLSession, an in-process stub, or your own client.
///
/// Implementation requirements: safe to call concurrently; honour `request.timeout`; return any
/// HTTP status as a response (a 500 is a response, not an error); throw ``TransportError`` when
/// no response came.
public protocol HTTPTransport: Sendable {
    /// Performs one exchange.
    func send(_ request: HTTPRequest) async throws -> HTTPResponse
}

/// The identity every request carries; the metrics host drops events without it.
public enum ConvertAgent {
    /// The SDK version sent in `User-Agent`.
    public static let version = "1.0.0"
    /// `ConvertAgent/<version>`.
    package static let userAgent = "ConvertAgent/\(version)"
}

extension HTTPTransport {
    /// Sends `request` with `User-Agent: ConvertAgent/<version>` set last, replacing any other.
    package func sendAsConvertAgent(_ request: HTTPRequest) async throws -> HTTPResponse {
        var stamped = request
        stamped.setHeader("User-Agent", ConvertAgent.userAgent)
        return try await send(stamped)
    }
}

extension TransportError: LocalizedError {
    /// The same text as ``description``.
    public var errorDescription: String? { description }
}
