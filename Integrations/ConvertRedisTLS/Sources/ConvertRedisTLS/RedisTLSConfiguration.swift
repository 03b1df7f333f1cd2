/// What a ``RedisTLSTransport`` trusts and presents: the roots the server's certificate must chain
/// to, the name it must carry, and an optional client certificate for servers that require one
/// (`tls-auth-clients yes`). TLS 1.2 is the lowest version it accepts.
///
/// ```swift
/// let tls = RedisTLSConfiguration(caFile: "/etc/redis/tls/ca.crt")
/// let mutual = RedisTLSConfiguration(caFile: "/etc/redis/tls/ca.crt",
///                                    clientCertificate: .files(chain: "/etc/app/redis.crt", privateKey: "/etc/app/redis.key"))
/// ```
public struct RedisTLSConfiguration: Sendable, Hashable {
    /// The certificates a server's chain must end at.
    public enum TrustRoots: Sendable, Hashable {
        /// The system's default roots.
        case system
        /// PEM certificates in a file (a CA bundle), or a directory of them.
        case file(String)
        /// PEM certificates given as bytes.
        case pem([UInt8])
    }

    /// A certificate chain and its private key, both PEM, presented to the server.
    public enum ClientCertificate: Sendable, Hashable {
        /// The chain (leaf first) and the key, each from a file.
        case files(chain: String, privateKey: String)
        /// The chain (leaf first) and the key, as bytes.
        case pem(chain: [UInt8], privateKey: [UInt8])
    }

    /// What the server's certificate must chain to (the system's roots by default).
    public var trustRoots: TrustRoots
    /// The name sent in SNI and checked against the server's certificate, when it differs from
    /// the configuration's host (connecting by address to a server whose certificate names it).
    /// `nil` checks the host: a name against the certificate's DNS names, an IP address against
    /// its IP addresses.
    public var serverName: String?
    /// Presented when the server asks for one (`nil`: none).
    public var clientCertificate: ClientCertificate?

    /// A configuration; by default the system's roots, the configuration's host as the name, no
    /// client certificate.
    public init(trustRoots: TrustRoots = .system, serverName: String? = nil, clientCertificate: ClientCertificate? = nil) {
        self.trustRoots = trustRoots
        self.serverName = serverName
        self.clientCertificate = clientCertificate
    }

    /// A configuration trusting the CA certificates in the PEM file at `caFile`.
    public init(caFile: String, serverName: String? = nil, clientCertificate: ClientCertificate? = nil) {
        self.init(trustRoots: .file(caFile), serverName: serverName, clientCertificate: clientCertificate)
    }
}
