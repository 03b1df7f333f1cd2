import ConvertRedis
import NIOCore
import NIOPosix
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
/// The transport owns one event-loop thread that carries every connection's bytes; the client's
/// own threads poll a descriptor per connection that is readable while decrypted bytes wait, so
/// the client runs its exchanges as it does over plain TCP.
///
/// ```swift
/// let transport = try RedisTLSTransport(RedisTLSConfiguration(caFile: "/etc/redis/tls/ca.crt"))
/// let redis = RedisClient(configuration: try RedisConfiguration(url: "rediss://app:secret@redis.internal:6380"),
///                         transport: transport)
/// ```
public final class RedisTLSTransport: RedisTransport {
    private let context: NIOSSLContext
    private let serverName: String?
    private let loop: EventLoopOwner

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
        loop = EventLoopOwner()
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
        let shared = try Shared(peer: peer, expectedName: name ?? host)
        let eventLoop = loop.group.next()
        let handshake = eventLoop.makePromise(of: Void.self)
        let context = self.context
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(.nanoseconds(left.wholeNanoseconds))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            // One socket read (64 KiB at most) per read the bridge lets through, so what a
            // connection buffers unread stays within its bound and a read.
            .channelOption(.maxMessagesPerRead, value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let tls = try Self.handler(context: context, serverName: name, shared: shared)
                    try channel.pipeline.syncOperations.addHandlers(
                        [PlaintextDetector(shared: shared), tls, Bridge(shared: shared, handshake: handshake)])
                }
            }

        let channel: any Channel
        do {
            channel = try bootstrap.connect(host: host, port: port).wait()
        } catch {
            let failure: RedisError = if case ChannelError.connectTimeout = error {
                .timeout(reason: "no connection to \(peer) within \(budget)")
            } else {
                .connectionFailed(reason: "connect to \(peer): \(error)")
            }
            handshake.fail(failure)
            shared.close()
            throw failure
        }
        let timeout = eventLoop.scheduleTask(in: .nanoseconds(max(deadline - .now, .zero).wholeNanoseconds)) {
            handshake.fail(RedisError.timeout(reason: "no TLS handshake with \(peer) within \(budget): "
                + "a server that does not speak TLS on this port (a plaintext server behind rediss://) does not answer one"))
            channel.close(promise: nil)
        }
        // Cancelled on the loop as the handshake ends, so a timer due just after a success never
        // closes the channel this returns.
        handshake.futureResult.whenComplete { _ in timeout.cancel() }
        do {
            try handshake.futureResult.wait()
            timeout.cancel()
        } catch {
            timeout.cancel()
            channel.close(promise: nil)
            shared.close()
            throw (error as? RedisError) ?? .tlsFailed(reason: "handshake with \(peer): \(error)")
        }
        return TLSStream(channel: channel, shared: shared, loop: loop)
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

    private static func isAddress(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}

/// The per-certificate verification callback's initializer, reached through a protocol: NIOSSL
/// marks it deprecated in favour of a callback that replaces verification entirely, while this
/// one keeps BoringSSL's verification and only observes it.
private protocol NotingClientHandler {
    init(context: NIOSSLContext, serverHostname: String?, verificationCallback: NIOSSLVerificationCallback?) throws
}

extension NIOSSLClientHandler: NotingClientHandler {}

/// The transport's event-loop thread, shut down when the transport and its last stream are gone.
final class EventLoopOwner: Sendable {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    deinit { group.shutdownGracefully { _ in } }
}

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
