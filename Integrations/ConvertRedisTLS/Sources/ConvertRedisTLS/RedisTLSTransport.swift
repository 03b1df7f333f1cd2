import ConvertRedis
import NIOCore
import NIOSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The Redis client's transport over TLS (SwiftNIO SSL): every connection is encrypted, the
/// server's certificate is verified against ``RedisTLSConfiguration/trustRoots`` and its name
/// (or IP address) checked, TLS 1.2 at least. It never falls back to plaintext, whatever the
/// configuration's ``ConvertRedis/RedisConfiguration/tls`` says.
///
/// The handshake runs in ``connect(_:deadline:)``, on the client's connector thread, bounded by
/// the configuration's `connectTimeout`. A failure names its cause in
/// ``ConvertRedis/RedisError/tlsFailed(reason:)``: an untrusted chain, an expired (or not yet
/// valid) certificate, a name mismatch, a server that answers in plaintext, a client
/// certificate required or refused; a handshake that does not end in time is a
/// ``ConvertRedis/RedisError/timeout(reason:)``.
///
/// It starts no thread: whichever of the client's threads drives a connection encrypts and
/// decrypts its bytes in place, on the connection's TCP socket, so the client runs its exchanges
/// as it does over plain TCP.
///
/// ```swift
/// let transport = try RedisTLSTransport(RedisTLSConfiguration(caFile: "/etc/redis/tls/ca.crt"))
/// let redis = RedisClient(configuration: try RedisConfiguration(url: "rediss://app:secret@redis.internal:6380"),
///                         transport: transport)
/// ```
public final class RedisTLSTransport: RedisTransport {
    private let context: NIOSSLContext
    private let serverName: String?

    /// A transport for `configuration`; throws ``ConvertRedis/RedisError/tlsFailed(reason:)`` when
    /// a certificate or key cannot be read.
    public init(_ configuration: RedisTLSConfiguration = RedisTLSConfiguration()) throws(RedisError) {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        tls.certificateVerification = .fullVerification
        do {
            switch configuration.trustRoots {
            case .system: tls.trustRoots = .default
            case .file(let path): tls.trustRoots = .certificates(try Self.certificates(file: path, what: "the CA file"))
            case .pem(let bytes): tls.trustRoots = .certificates(try Self.certificates(pem: bytes, what: "the CA certificates"))
            }
            switch configuration.clientCertificate {
            case nil:
                break
            case .files(let chain, let key)?:
                tls.certificateChain = try Self.certificates(file: chain, what: "the client certificate file").map { .certificate($0) }
                tls.privateKey = .privateKey(try Self.key { try NIOSSLPrivateKey(file: key, format: .pem) })
            case .pem(let chain, let key)?:
                tls.certificateChain = try Self.certificates(pem: chain, what: "the client certificate").map { .certificate($0) }
                tls.privateKey = .privateKey(try Self.key { try NIOSSLPrivateKey(bytes: key, format: .pem) })
            }
            context = try NIOSSLContext(configuration: tls)
        } catch let error as RedisError {
            throw error
        } catch {
            throw .tlsFailed(reason: "cannot set up TLS: \(error)")
        }
        serverName = configuration.serverName
    }

    private static func certificates(file path: String, what: String) throws(RedisError) -> [NIOSSLCertificate] {
        let found: [NIOSSLCertificate]
        do {
            found = try NIOSSLCertificate.fromPEMFile(path)
        } catch {
            throw .tlsFailed(reason: "cannot read \(what) \(path): \(error)")
        }
        guard !found.isEmpty else { throw .tlsFailed(reason: "\(what) \(path) holds no PEM certificate") }
        return found
    }

    private static func certificates(pem bytes: [UInt8], what: String) throws(RedisError) -> [NIOSSLCertificate] {
        let found: [NIOSSLCertificate]
        do {
            found = try NIOSSLCertificate.fromPEMBytes(bytes)
        } catch {
            throw .tlsFailed(reason: "cannot read \(what) (PEM): \(error)")
        }
        guard !found.isEmpty else { throw .tlsFailed(reason: "\(what) hold no PEM certificate") }
        return found
    }

    private static func key(_ load: () throws -> NIOSSLPrivateKey) throws(RedisError) -> NIOSSLPrivateKey {
        do {
            return try load()
        } catch {
            throw .tlsFailed(reason: "cannot read the client's private key: \(error)")
        }
    }

    /// `true`: every stream is TLS.
    public var encrypts: Bool { true }

    /// Connects to the configuration's host and port and completes the TLS handshake before
    /// `deadline`.
    public func connect(_ configuration: RedisConfiguration, deadline: ContinuousClock.Instant) throws(RedisError) -> any RedisStream {
        let host = configuration.host.hasPrefix("[") && configuration.host.hasSuffix("]")
            ? String(configuration.host.dropFirst().dropLast()) : configuration.host
        let port = configuration.port
        let peer = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        guard (1...65535).contains(port) else { throw .connectionFailed(reason: "\(peer): invalid port") }
        let budget = "\(configuration.connectTimeout.roundedUpMilliseconds) ms"
        let left = deadline - .now
        guard left > .zero else { throw .timeout(reason: "no connection to \(peer) within \(budget)") }

        // An IP address is checked against the certificate's IP addresses, and never sent as SNI.
        let name = serverName ?? (Self.isAddress(host) ? nil : host)
        let shared = Shared(peer: peer, expectedName: name ?? host)
        let tcp = try RedisPlainTransport().connect(configuration, deadline: deadline)
        let handlers: [any ChannelHandler]
        do {
            handlers = [PlaintextDetector(shared: shared), try Self.handler(context: context, serverName: name, shared: shared),
                        Bridge(shared: shared)]
        } catch {
            tcp.close()
            throw .tlsFailed(reason: "cannot set up TLS for \(peer): \(error)")
        }
        return try TLSStream(tcp: tcp, remoteAddress: Self.peerAddress(of: tcp.descriptor), shared: shared, handlers: handlers, deadline: deadline,
                             budget: budget)
    }

    private static func handler(context: NIOSSLContext, serverName: String?, shared: Shared) throws -> NIOSSLClientHandler {
        // The per-certificate callback only notes why the chain failed (expired, untrusted), which
        // BoringSSL's error does not say; the verdict stays BoringSSL's.
        try noting(NIOSSLClientHandler.self, context: context, serverName: serverName) { result, certificate in
            if case .failed = result { shared.noteRejected(certificate) }
            return result
        }
    }

    private static func noting<Handler: NotingClientHandler>(
        _ type: Handler.Type, context: NIOSSLContext, serverName: String?,
        callback: @escaping NIOSSLVerificationCallback
    ) throws -> Handler {
        try Handler(context: context, serverHostname: serverName, verificationCallback: callback)
    }

    /// The address a socket is connected to (NIOSSL checks a certificate by name or by it).
    private static func peerAddress(of descriptor: Int32) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let found = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(descriptor, $0, &length) == 0 }
        }
        guard found else { return nil }
        // sockaddr_in and sockaddr_in6 alike: the port at offset 2 (network order); the address at
        // 4 (IPv4, 4 bytes) or 8 (IPv6, 16 bytes).
        let family = Int32(storage.ss_family)
        let (port, text) = withUnsafeBytes(of: &storage) { raw -> (Int, [CChar]?) in
            var text = [CChar](repeating: 0, count: 64)
            let port = Int(raw[2]) << 8 | Int(raw[3])
            let offset = family == AF_INET ? 4 : 8
            guard family == AF_INET || family == AF_INET6,
                  inet_ntop(family, raw.baseAddress! + offset, &text, socklen_t(text.count)) != nil else { return (port, nil) }
            return (port, text)
        }
        guard let text else { return nil }
        return try? SocketAddress(ipAddress: String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
                                 port: port)
    }

    private static func isAddress(_ host: String) -> Bool {
        var address = [UInt8](repeating: 0, count: 16)
        return inet_pton(AF_INET, host, &address) == 1 || inet_pton(AF_INET6, host, &address) == 1
    }
}

/// The per-certificate verification callback's initializer, reached through a protocol: NIOSSL
/// marks it deprecated in favour of a callback that replaces verification entirely, while this
/// one keeps BoringSSL's verification and only observes it.
private protocol NotingClientHandler {
    init(context: NIOSSLContext, serverHostname: String?, verificationCallback: NIOSSLVerificationCallback?) throws
}

extension NIOSSLClientHandler: NotingClientHandler {}

extension Duration {
    var wholeNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : product &+ attoseconds / 1_000_000_000
    }

    /// Rounded up, without overflowing on a saturated duration.
    var roundedUpMilliseconds: Int64 {
        let nanoseconds = wholeNanoseconds
        return nanoseconds / 1_000_000 + (nanoseconds % 1_000_000 > 0 ? 1 : 0)
    }
}
