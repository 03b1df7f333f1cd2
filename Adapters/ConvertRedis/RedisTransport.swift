#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// How a ``RedisClient`` reaches its server: opens the byte stream each pooled connection speaks
/// RESP over.
///
/// The client's own is ``RedisPlainTransport`` (TCP, no encryption). A TLS transport
/// (`RedisTLSTransport` in the `ConvertRedisTLS` package) encrypts the stream; a configuration
/// with ``RedisConfiguration/tls`` set is refused unless the transport ``encrypts``, before any
/// socket is opened, so nothing is ever sent in plaintext in its place.
///
/// `connect` runs on the client's connector thread (never a caller's) and must return or throw by
/// the deadline it is given, handshake included.
public protocol RedisTransport: Sendable {
    /// Whether every stream this transport opens is encrypted and authenticates the server: a
    /// `tls` configuration needs it.
    var encrypts: Bool { get }

    /// Opens a stream to `configuration.host`:`configuration.port` (a name, an IPv4 or an IPv6
    /// literal, brackets allowed) before `deadline`, or throws: ``RedisError/timeout(reason:)``
    /// when the deadline passed, ``RedisError/connectionFailed(reason:)`` when the server could
    /// not be reached, ``RedisError/tlsFailed(reason:)`` when a secure session could not be
    /// established. No error's description may contain the configuration's password.
    func connect(_ configuration: RedisConfiguration, deadline: ContinuousClock.Instant) throws(RedisError) -> any RedisStream
}

/// A connected byte stream under one Redis connection, used by one thread at a time (the
/// connection moves between the connector, the callers' and the client's I/O thread, never two
/// at once).
///
/// Every call returns at once except ``readWaiting(into:)`` (about a millisecond at most) and
/// ``wait(writable:until:)`` (until its deadline). The client's I/O thread polls ``descriptor``
/// beside the other connections' for readability (`POLLIN`), and for writability (`POLLOUT`) while
/// ``writeAvailable(_:from:)`` has left bytes untaken: a stream that buffers in user space (TLS)
/// gives a descriptor that polls readable whenever ``readAvailable(into:)`` would return bytes or
/// throw (an eventfd or a pipe it signals), and takes every byte it is given.
public protocol RedisStream: AnyObject {
    /// `host:port`, for messages.
    var peer: String { get }

    /// The descriptor to poll; negative once the stream is closed.
    var descriptor: Int32 { get }

    /// Whether the stream is idle as a healthy pooled connection is: open, nothing to read, no
    /// hang-up or failure pending.
    var isQuiet: Bool { get }

    /// Writes what the stream takes now of `bytes` from `offset`, without waiting: the count of
    /// bytes taken (0 when it takes none now). A broken stream throws.
    func writeAvailable(_ bytes: [UInt8], from offset: Int) throws(RedisError) -> Int

    /// Hands what has arrived to `received`, without waiting; `false` when nothing has. The peer
    /// closing the stream, or a failure of the stream, throws.
    func readAvailable(into received: (UnsafeRawBufferPointer) -> Void) throws(RedisError) -> Bool

    /// As ``readAvailable(into:)``, first waiting about a millisecond for bytes when none are
    /// there yet.
    func readWaiting(into received: (UnsafeRawBufferPointer) -> Void) throws(RedisError) -> Bool

    /// Waits until the stream is readable (or writable too, when `writable`), or `instant`
    /// passes: `false` when it passed. A hang-up or failure counts as readable (the following
    /// read reports it).
    func wait(writable: Bool, until instant: ContinuousClock.Instant) throws(RedisError) -> Bool

    /// Closes the stream (idempotent); ``descriptor`` is negative after.
    func close()
}

/// The client's own transport: plain TCP, no encryption (``encrypts`` is `false`). It is what
/// ``RedisClient/init(configuration:transport:clock:)`` uses unless told otherwise.
public struct RedisPlainTransport: RedisTransport {
    /// The plain transport.
    public init() {}

    /// `false`: a configuration asking for TLS is refused with it.
    public var encrypts: Bool { false }

    /// A TCP connection to the configuration's host and port.
    public func connect(_ configuration: RedisConfiguration, deadline: ContinuousClock.Instant) throws(RedisError) -> any RedisStream {
        try TCPSocket.connect(host: configuration.host, port: configuration.port,
                              deadline: Deadline(instant: deadline, budget: configuration.connectTimeout))
    }
}

extension RedisTransport where Self == RedisPlainTransport {
    /// Plain TCP (see ``RedisPlainTransport``).
    public static var plain: RedisPlainTransport { RedisPlainTransport() }
}

extension TCPSocket: RedisStream {
    var descriptor: Int32 { fd }

    func wait(writable: Bool, until instant: ContinuousClock.Instant) throws(RedisError) -> Bool {
        try wait(for: writable ? Int16(POLLIN) | Int16(POLLOUT) : Int16(POLLIN), until: instant) != 0
    }
}

/// A connection's stream: the plain socket called directly (the hot path pays no dynamic
/// dispatch), any other transport's through its protocol.
enum ConnectionStream {
    case tcp(TCPSocket)
    case other(any RedisStream)

    init(_ stream: any RedisStream) {
        if let socket = stream as? TCPSocket { self = .tcp(socket) } else { self = .other(stream) }
    }

    var peer: String {
        switch self {
        case .tcp(let socket): socket.peer
        case .other(let stream): stream.peer
        }
    }

    @inline(__always) var descriptor: Int32 {
        switch self {
        case .tcp(let socket): socket.fd
        case .other(let stream): stream.descriptor
        }
    }

    @inline(__always) var isQuiet: Bool {
        switch self {
        case .tcp(let socket): socket.isQuiet
        case .other(let stream): stream.isQuiet
        }
    }

    @inline(__always) func writeAvailable(_ bytes: [UInt8], from offset: Int) throws(RedisError) -> Int {
        switch self {
        case .tcp(let socket): try socket.writeAvailable(bytes, from: offset)
        case .other(let stream): try stream.writeAvailable(bytes, from: offset)
        }
    }

    @inline(__always) func readAvailable(into received: (UnsafeRawBufferPointer) -> Void) throws(RedisError) -> Bool {
        switch self {
        case .tcp(let socket): try socket.readAvailable(into: received)
        case .other(let stream): try stream.readAvailable(into: received)
        }
    }

    @inline(__always) func readWaiting(into received: (UnsafeRawBufferPointer) -> Void) throws(RedisError) -> Bool {
        switch self {
        case .tcp(let socket): try socket.readWaiting(into: received)
        case .other(let stream): try stream.readWaiting(into: received)
        }
    }

    func wait(for events: Int16, until instant: ContinuousClock.Instant) throws(RedisError) -> Bool {
        switch self {
        case .tcp(let socket): try socket.wait(for: events, until: instant) != 0
        case .other(let stream): try stream.wait(writable: events & Int16(POLLOUT) != 0, until: instant)
        }
    }

    func close() {
        switch self {
        case .tcp(let socket): socket.close()
        case .other(let stream): stream.close()
        }
    }
}
