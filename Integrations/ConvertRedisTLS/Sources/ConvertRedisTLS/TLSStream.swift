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

/// What the event loop and the connection's holder share: decrypted bytes not yet read, how the
/// stream ended, and a pipe that is readable while either is there to see (for the client's
/// polls).
final class Shared: Sendable {
    /// Decrypted bytes buffered beyond this hold back reads from the socket until the holder
    /// takes them: what a slow reader costs is bounded.
    static let readLimit = 256 * 1024

    struct State {
        var incoming: [UInt8] = []
        var failure: RedisError?
        var closed = false
        /// Whether the pipe holds its byte (readable).
        var signalled = false
        /// A socket read the bound held back.
        var readHeld = false
        var pipeOpen = true
        /// Why a certificate of the server's chain was refused, as the verification saw it.
        var rejected: String?
    }

    let peer: String
    /// The name the server's certificate must carry (its host, or the override).
    let expectedName: String
    let state = NIOLockedValueBox(State())
    let readEnd: Int32
    let writeEnd: Int32

    init(peer: String, expectedName: String) throws(RedisError) {
        self.peer = peer
        self.expectedName = expectedName
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            throw .connectionFailed(reason: "no pipe for \(peer): \(String(cString: strerror(errno)))")
        }
        for fd in ends {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK)
        }
        readEnd = ends[0]
        writeEnd = ends[1]
    }

    deinit { close() }

    /// Makes the pipe readable (under the lock, so it never writes to a closed descriptor).
    func signal(_ state: inout State) {
        guard !state.signalled, state.pipeOpen else { return }
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
        state.signalled = true
    }

    /// Makes the pipe quiet again once nothing is left to see.
    func unsignal(_ state: inout State) {
        guard state.signalled, state.pipeOpen, state.incoming.isEmpty, state.failure == nil, !state.closed else { return }
        var drain: UInt8 = 0
        while read(readEnd, &drain, 1) > 0 {}
        state.signalled = false
    }

    func fail(_ error: RedisError) {
        state.withLockedValue { state in
            if state.failure == nil { state.failure = error }
            signal(&state)
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

    /// Closes the pipe (idempotent).
    func close() {
        state.withLockedValue { state in
            guard state.pipeOpen else { return }
            state.pipeOpen = false
            systemClose(readEnd)
            systemClose(writeEnd)
        }
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

/// After TLS: buffers decrypted bytes for the stream's holder, signals its pipe, holds reads
/// from the socket while the buffer is full, and ends the handshake's wait.
final class Bridge: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let shared: Shared
    private let handshake: EventLoopPromise<Void>

    init(shared: Shared, handshake: EventLoopPromise<Void>) {
        self.shared = shared
        self.handshake = handshake
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event { handshake.succeed() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        shared.state.withLockedValue { state in
            state.incoming.append(contentsOf: buffer.readableBytesView)
            shared.signal(&state)
        }
    }

    func read(context: ChannelHandlerContext) {
        let hold = shared.state.withLockedValue { state -> Bool in
            guard state.incoming.count >= Shared.readLimit else { return false }
            state.readHeld = true
            return true
        }
        if !hold { context.read() }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let failure = shared.describe(error)
        shared.fail(failure)
        handshake.fail(failure)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        let failure = shared.state.withLockedValue { state -> RedisError? in
            state.closed = true
            shared.signal(&state)
            return state.failure
        }
        handshake.fail(failure ?? .tlsFailed(reason: "\(shared.peer) closed the connection during the TLS handshake "
            + "(does it speak TLS on this port?)"))
        context.fireChannelInactive()
    }
}

/// A TLS connection as the Redis client's connections use it: bytes in and out without waiting,
/// and a pipe to poll that is readable while decrypted bytes (or the end) wait.
final class TLSStream: RedisStream {
    let peer: String
    private(set) var descriptor: Int32
    private let channel: any Channel
    private let shared: Shared
    /// Keeps the event loop running while the stream exists.
    private let loop: EventLoopOwner
    /// The bytes handed to the reader, swapped with the shared buffer (no allocation once grown).
    private var taken: [UInt8] = []

    init(channel: any Channel, shared: Shared, loop: EventLoopOwner) {
        self.channel = channel
        self.shared = shared
        self.loop = loop
        peer = shared.peer
        descriptor = shared.readEnd
    }

    deinit { close() }

    /// Decrypted bytes waiting to be read.
    var buffered: Int { shared.state.withLockedValue { $0.incoming.count } }

    var isQuiet: Bool {
        descriptor >= 0 && shared.state.withLockedValue { $0.incoming.isEmpty && $0.failure == nil && !$0.closed }
    }

    func writeAvailable(_ bytes: [UInt8], from offset: Int) throws(RedisError) -> Int {
        guard offset < bytes.count else { return 0 }
        if let failure = shared.state.withLockedValue({ $0.failure ?? ($0.closed ? .connectionFailed(reason: "\(peer) closed the connection") : nil) }) {
            throw failure
        }
        guard descriptor >= 0 else { throw .connectionFailed(reason: "connection closed") }
        var buffer = channel.allocator.buffer(capacity: bytes.count - offset)
        _ = bytes.withUnsafeBytes { buffer.writeBytes(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
        // The event loop encrypts and sends it; what it cannot send yet it keeps (an exchange's
        // commands, which the caller holds anyway).
        channel.writeAndFlush(buffer, promise: nil)
        return bytes.count - offset
    }

    func readAvailable(into received: (UnsafeRawBufferPointer) -> Void) throws(RedisError) -> Bool {
        taken.removeAll(keepingCapacity: true)
        let (resume, ended) = shared.state.withLockedValue { state -> (Bool, RedisError?) in
            guard state.incoming.isEmpty else {
                swap(&state.incoming, &taken)
                shared.unsignal(&state)
                defer { state.readHeld = false }
                return (state.readHeld, nil)
            }
            if let failure = state.failure { return (false, failure) }
            if state.closed { return (false, .connectionFailed(reason: "\(peer) closed the connection")) }
            return (false, nil)
        }
        if resume {
            let channel = self.channel
            channel.eventLoop.execute { channel.read() }
        }
        if let ended { throw ended }
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
        // Writes are always taken (see writeAvailable).
        if writable { return true }
        guard descriptor >= 0 else { throw .connectionFailed(reason: "connection closed") }
        while true {
            let left = instant - .now
            guard left > .zero else { return false }
            var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let result = poll(&entry, 1, Int32(clamping: left.roundedUpMilliseconds))
            if result > 0 { return true }
            if result < 0, errno != EINTR { throw .connectionFailed(reason: "poll: \(String(cString: strerror(errno)))") }
        }
    }

    func close() {
        guard descriptor >= 0 else { return }
        descriptor = -1
        channel.close(promise: nil)
        shared.close()
    }
}

private func systemClose(_ fd: Int32) {
    _ = close(fd)
}
