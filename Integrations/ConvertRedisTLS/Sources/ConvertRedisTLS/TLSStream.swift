import ConvertRedis
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL
import NIOTLS
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What a connection's handlers and its stream share: decrypted bytes not yet read, how the
/// connection ended, and why a certificate was refused.
final class Shared: Sendable {
    struct State {
        var incoming: [UInt8] = []
        var failure: RedisError?
        var closed = false
        var handshakeDone = false
        /// Why a certificate of the server's chain was refused, as the verification saw it.
        var rejected: String?
    }

    let peer: String
    /// The name the server's certificate must carry (its host, or the override).
    let expectedName: String
    let state = NIOLockedValueBox(State())

    init(peer: String, expectedName: String) {
        self.peer = peer
        self.expectedName = expectedName
    }

    func fail(_ error: RedisError) {
        state.withLockedValue { state in
            if state.failure == nil { state.failure = error }
        }
    }

    func noteRejected(_ certificate: NIOSSLCertificate) {
        let now = time(nil)
        let reason: String
        if certificate.notValidAfter < now {
            reason = "the server's certificate expired (\(Self.subject(certificate)))"
        } else if certificate.notValidBefore > now {
            reason = "the server's certificate is not valid yet (\(Self.subject(certificate)))"
        } else {
            reason = "the server's certificate chain is not trusted: it does not end at a trusted CA (\(Self.subject(certificate)))"
        }
        state.withLockedValue { state in
            if state.rejected == nil { state.rejected = reason }
        }
    }

    private static func subject(_ certificate: NIOSSLCertificate) -> String {
        // Serial number, common name and alternative names: a certificate carries no secret.
        certificate.description
    }

    /// The error for what the channel reported, naming the cause.
    func describe(_ error: any Error) -> RedisError {
        if let redis = error as? RedisError { return redis }
        if let extra = error as? NIOSSLExtraError, extra == .failedToValidateHostname {
            return .tlsFailed(reason: "name mismatch: the certificate of \(peer) is not for \(expectedName)")
        }
        let text = String(describing: error)
        if text.contains("CERTIFICATE_VERIFY_FAILED") {
            let rejected = state.withLockedValue { $0.rejected }
            return .tlsFailed(reason: "\(rejected ?? "the server's certificate failed verification") (\(peer))")
        }
        if text.contains("WRONG_VERSION_NUMBER") || text.contains("HTTP_REQUEST") || text.contains("PACKET_LENGTH_TOO_LONG") {
            return Self.plaintext(peer)
        }
        if text.contains("CERTIFICATE_REQUIRED") {
            return .tlsFailed(reason: "\(peer) requires a client certificate and none was given")
        }
        if text.contains("BAD_CERTIFICATE") || text.contains("UNKNOWN_CA") || text.contains("CERTIFICATE_UNKNOWN") {
            return .tlsFailed(reason: "\(peer) refused the client certificate (\(text))")
        }
        if case NIOSSLError.uncleanShutdown = error {
            return .connectionFailed(reason: "\(peer) closed the connection")
        }
        if case NIOSSLError.handshakeFailed = error {
            return .tlsFailed(reason: "handshake with \(peer) failed: \(text)")
        }
        return .connectionFailed(reason: "\(peer): \(text)")
    }

    static func plaintext(_ peer: String) -> RedisError {
        .tlsFailed(reason: "\(peer) answered in plaintext, not TLS: a plaintext server behind rediss:// (or the wrong port)")
    }
}

/// Before TLS: a server whose first bytes are not a TLS record answered in plaintext (a Redis
/// error reply to the client hello, say); the connection fails naming that.
final class PlaintextDetector: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let shared: Shared

    init(shared: Shared) { self.shared = shared }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        guard let first = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) else { return }
        // TLS record types: change cipher spec, alert, handshake, application data.
        guard (0x14...0x17).contains(first) else {
            shared.fail(Shared.plaintext(shared.peer))
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(data)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}

/// After TLS: keeps decrypted bytes for the stream's holder and notes the handshake's end and
/// the connection's.
final class Bridge: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let shared: Shared

    init(shared: Shared) { self.shared = shared }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event { shared.state.withLockedValue { $0.handshakeDone = true } }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        shared.state.withLockedValue { $0.incoming.append(contentsOf: buffer.readableBytesView) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        shared.fail(shared.describe(error))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        shared.state.withLockedValue { $0.closed = true }
        context.fireChannelInactive()
    }
}

/// A TLS connection as the Redis client's connections use it. Its thread of the moment encrypts
/// and decrypts in place (``DrivenChannel``): a write is encrypted and sent within
/// ``writeAvailable(_:from:)``, and a read takes the socket's bytes and decrypts them within
/// ``readAvailable(into:)``, so a round trip costs no thread hand-off beyond plain TCP's. The
/// descriptor polled is the TCP socket's; bytes stay in the kernel until the holder reads.
final class TLSStream: RedisStream {
    let peer: String
    private let channel: DrivenChannel
    private let shared: Shared
    // One step at a time, and the memory of each visible to the next, whichever thread takes it.
    private let lock = NIOLock()
    /// The bytes handed to the reader, swapped with the shared buffer (no allocation once grown).
    private var taken: [UInt8] = []
    /// Plaintext counted as not yet taken although it is encrypted: the last byte of a write
    /// whose ciphertext the socket has not all taken. It is reported taken once it has, so the
    /// client keeps polling for writability meanwhile.
    private var owed = 0

    /// Connects `tcp` through `handlers` and completes the handshake before `deadline`.
    init(tcp: any RedisStream, remoteAddress: SocketAddress?, shared: Shared, handlers: [any ChannelHandler],
         deadline: ContinuousClock.Instant, budget: String) throws(RedisError) {
        peer = shared.peer
        self.shared = shared
        channel = DrivenChannel(tcp: tcp, remoteAddress: remoteAddress)
        do {
            try channel.pipeline.syncOperations.addHandlers(handlers)
        } catch {
            channel.end()
            throw .tlsFailed(reason: "cannot set up TLS for \(peer): \(error)")
        }
        try locked { () throws(RedisError) in
            channel.activate()
            do throws(RedisError) {
                while !shared.state.withLockedValue({ $0.handshakeDone }) {
                    try checkHealthy()
                    try channel.send()
                    guard try tcp.wait(writable: channel.isSending, until: deadline) else {
                        throw .timeout(reason: "no TLS handshake with \(peer) within \(budget): a server that does not "
                            + "speak TLS on this port (a plaintext server behind rediss://) does not answer one")
                    }
                    try receive()
                }
                try checkHealthy()
            } catch {
                channel.end()
                throw error
            }
        }
    }

    deinit { close() }

    /// Decrypted bytes waiting to be read.
    var buffered: Int { lock.withLock { shared.state.withLockedValue { $0.incoming.count } } }

    var descriptor: Int32 { channel.tcp.descriptor }

    var isQuiet: Bool {
        lock.withLock {
            guard !channel.isSending, owed == 0, channel.failure == nil, channel.tcp.descriptor >= 0 else { return false }
            // Records that carry no data (a TLS 1.3 server's session tickets) are taken in here,
            // so they do not make an idle connection look busy.
            if !channel.tcp.isQuiet {
                do { try receive() } catch { return false }
            }
            return shared.state.withLockedValue { $0.incoming.isEmpty && $0.failure == nil && !$0.closed }
                && channel.tcp.isQuiet
        }
    }

    func writeAvailable(_ bytes: [UInt8], from offset: Int) throws(RedisError) -> Int {
        guard offset < bytes.count else { return 0 }
        return try locked { () throws(RedisError) -> Int in
            try checkHealthy()
            try channel.send()
            if owed > 0 {
                guard !channel.isSending else { return 0 }
                defer { owed = 0 }
                return min(owed, bytes.count - offset)
            }
            // Ciphertext of the handlers' own (an alert, a key update) goes out first.
            guard !channel.isSending else { return 0 }
            var buffer = channel.allocator.buffer(capacity: bytes.count - offset)
            _ = bytes.withUnsafeBytes { buffer.writeBytes(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
            channel.pipeline.writeAndFlush(buffer, promise: nil)
            channel.loop.run()
            try checkHealthy()
            guard channel.isSending else { return bytes.count - offset }
            owed = 1
            return bytes.count - offset - 1
        }
    }

    func readAvailable(into received: (UnsafeRawBufferPointer) -> Void) throws(RedisError) -> Bool {
        taken.removeAll(keepingCapacity: true)
        try locked { () throws(RedisError) in
            try channel.send()
            if shared.state.withLockedValue({ $0.incoming.isEmpty }) { try receive() }
            let ended = shared.state.withLockedValue { state -> RedisError? in
                if state.incoming.isEmpty {
                    if let failure = state.failure ?? channel.failure { return failure }
                    if state.closed { return .connectionFailed(reason: "\(peer) closed the connection") }
                }
                swap(&state.incoming, &taken)
                return nil
            }
            if let ended { throw ended }
        }
        guard !taken.isEmpty else { return false }
        taken.withUnsafeBytes { received($0) }
        return true
    }

    func readWaiting(into received: (UnsafeRawBufferPointer) -> Void) throws(RedisError) -> Bool {
        if try readAvailable(into: received) { return true }
        guard try wait(writable: false, until: .now + .milliseconds(1)) else { return false }
        return try readAvailable(into: received)
    }

    func wait(writable: Bool, until instant: ContinuousClock.Instant) throws(RedisError) -> Bool {
        let (ready, sending) = lock.withLock {
            (!shared.state.withLockedValue { $0.incoming.isEmpty && $0.failure == nil && !$0.closed } || channel.failure != nil,
             channel.isSending || owed > 0)
        }
        if ready { return true }
        return try channel.tcp.wait(writable: writable || sending, until: instant)
    }

    func close() {
        lock.withLock {
            guard channel.tcp.descriptor >= 0 else { return }
            // The handlers' close (a close_notify, sent as far as the socket takes it), then the socket.
            channel.pipeline.close(promise: nil)
            channel.loop.run()
            channel.end()
        }
    }

    private func locked<T>(_ body: () throws(RedisError) -> T) throws(RedisError) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// Reads what the socket has and hands it to the handlers (under the lock).
    private func receive() throws(RedisError) {
        do {
            _ = try channel.tcp.readAvailable { channel.receive($0) }
        } catch {
            // The handlers' reason (an alert, a refused certificate) names more than the socket's.
            if let failure = shared.state.withLockedValue({ $0.failure }) { throw failure }
            throw error
        }
        try channel.send()
    }

    private func checkHealthy() throws(RedisError) {
        if let failure = shared.state.withLockedValue({ $0.failure }) ?? channel.failure { throw failure }
        if channel.tcp.descriptor < 0 || shared.state.withLockedValue({ $0.closed }) {
            throw .connectionFailed(reason: "\(peer) closed the connection")
        }
    }
}
