#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a Redis call failed. Descriptions name the cause (`ECONNREFUSED`, the server's message)
/// and never carry a password.
public enum RedisError: Error, CustomStringConvertible, Sendable, Hashable {
    /// No connection could be made or kept: refused, reset, closed by the server, or the server
    /// is inside its reconnect backoff after such a failure.
    case connectionFailed(reason: String)
    /// A connect, a reply, or a free pooled connection did not come within its deadline.
    case timeout(reason: String)
    /// The server answered with an error reply (`WRONGTYPE …`, `ERR …`).
    case serverError(message: String)
    /// The bytes from the server are not RESP2, or exceed a parser limit.
    case protocolError(reason: String)
    /// `AUTH` was refused, or the server requires it and none was configured.
    case authenticationFailed(message: String)
    /// The client was closed.
    case clientClosed
    /// The configuration asks for TLS (``RedisConfiguration/tls``, a `rediss://` URL) and the
    /// client's transport speaks plaintext only: it refuses every call without opening a
    /// connection, rather than send the password and data in the clear.
    case tlsUnavailable(reason: String)
    /// No secure session with the server: its certificate is untrusted, expired or for another
    /// name, it refused the client's certificate, or it does not speak TLS. The reason names
    /// which.
    case tlsFailed(reason: String)

    public var description: String {
        switch self {
        case .connectionFailed(let reason): "Redis connection failed: \(reason)"
        case .timeout(let reason): "Redis timeout: \(reason)"
        case .serverError(let message): "Redis server error: \(message)"
        case .protocolError(let reason): "Redis protocol error: \(reason)"
        case .authenticationFailed(let message): "Redis authentication failed: \(message)"
        case .clientClosed: "Redis client is closed"
        case .tlsUnavailable(let reason): "Redis TLS unavailable: \(reason)"
        case .tlsFailed(let reason): "Redis TLS failed: \(reason)"
        }
    }

    /// The refusal of a configuration that asks for TLS, by a client whose transport has none.
    static func plaintextOnly(_ configuration: RedisConfiguration) -> RedisError {
        .tlsUnavailable(reason: "the configuration for \(configuration.host):\(configuration.port) asks for TLS (rediss://), "
            + "which needs a TLS connector: pass RedisClient(configuration:transport:) a RedisTLSTransport "
            + "(package ConvertRedisTLS); this client's transport speaks plaintext only, so it opens no connection")
    }

    /// The error for an error reply: authentication refusals get their own case.
    static func reply(_ message: String) -> RedisError {
        if message.hasPrefix("NOAUTH") || message.hasPrefix("WRONGPASS") {
            return .authenticationFailed(message: message)
        }
        return .serverError(message: message)
    }
}

/// `strerror` with the symbolic name in front, e.g. "Connection refused (ECONNREFUSED)".
func describeErrno(_ code: Int32) -> String {
    let text = String(cString: strerror(code))
    return "\(text) (\(errnoName(code)))"
}

private func errnoName(_ code: Int32) -> String {
    switch code {
    case ECONNREFUSED: "ECONNREFUSED"
    case ECONNRESET: "ECONNRESET"
    case ECONNABORTED: "ECONNABORTED"
    case ETIMEDOUT: "ETIMEDOUT"
    case EHOSTUNREACH: "EHOSTUNREACH"
    case ENETUNREACH: "ENETUNREACH"
    case ENETDOWN: "ENETDOWN"
    case EPIPE: "EPIPE"
    case ENOTCONN: "ENOTCONN"
    case EADDRNOTAVAIL: "EADDRNOTAVAIL"
    case EAFNOSUPPORT: "EAFNOSUPPORT"
    case EMFILE: "EMFILE"
    case ENFILE: "ENFILE"
    case ENOBUFS: "ENOBUFS"
    case EINVAL: "EINVAL"
    case EACCES: "EACCES"
    case EPERM: "EPERM"
    default: "errno \(code)"
    }
}
