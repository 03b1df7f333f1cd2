import Foundation

/// Which URLs the SDK may talk to: `https` always, `http` only when explicitly allowed
/// (loopback test servers, say).
public struct EndpointPolicy: Sendable, Hashable {
    /// Whether plain `http` URLs are accepted; `false` by default.
    public var allowsInsecureHTTP: Bool

    /// A policy; `https` only unless `allowsInsecureHTTP`.
    public init(allowsInsecureHTTP: Bool = false) {
        self.allowsInsecureHTTP = allowsInsecureHTTP
    }

    /// Parses `text` as an endpoint URL and checks its scheme.
    package func url(_ text: String) throws -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), url.host != nil else {
            throw TransportError.refused("\"\(text)\" is not an absolute URL")
        }
        switch scheme {
        case "https": return url
        case "http" where allowsInsecureHTTP: return url
        case "http": throw TransportError.refused("plain http endpoints need allowsInsecureHTTP: \(text)")
        default: throw TransportError.refused("unsupported scheme \(scheme)")
        }
    }
}
