#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// When a wait must end, and the budget it came from (for messages).
struct Deadline {
    let instant: ContinuousClock.Instant
    let budget: Duration

    static func after(_ budget: Duration) -> Deadline { Deadline(instant: .now + budget, budget: budget) }

    var budgetText: String { "\(budget.wholeMillisecondsRoundedUp) ms" }
}

/// A TCP socket whose every wait is bounded: a `poll` until a deadline, or a read the kernel
/// gives up on after a short timeout (``readWaiting(into:)``); every other read and write
/// returns at once (`MSG_DONTWAIT`). Used by one thread at a time.
final class TCPSocket {
    private(set) var fd: Int32
    /// `host:port`, for messages.
    let peer: String
    private var chunk = [UInt8](repeating: 0, count: 64 * 1024)

    private init(fd: Int32, peer: String) {
        self.fd = fd
        self.peer = peer
    }

    deinit { close() }

    /// Resolves `host` (a name, an IPv4 or an IPv6 literal, brackets allowed) and connects to the
    /// first address that accepts before `deadline`.
    static func connect(host: String, port: Int, deadline: Deadline) throws(RedisError) -> TCPSocket {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let peer = bare.contains(":") ? "[\(bare)]:\(port)" : "\(bare):\(port)"
        guard (1...65535).contains(port) else { throw .connectionFailed(reason: "\(peer): invalid port") }

        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Darwin)
        hints.ai_socktype = SOCK_STREAM
        #else
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #endif
        hints.ai_protocol = Int32(IPPROTO_TCP)
        var list: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(bare, String(port), &hints, &list)
        guard resolved == 0, let first = list else {
            throw .connectionFailed(reason: "resolve \(bare): \(String(cString: gai_strerror(resolved)))")
        }
        defer { freeaddrinfo(list) }

        var lastError: RedisError = .connectionFailed(reason: "connect to \(peer): no address")
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let info = candidate {
            candidate = info.pointee.ai_next
            do {
                let fd = try open(info.pointee, peer: peer, deadline: deadline)
                return TCPSocket(fd: fd, peer: peer)
            } catch {
                lastError = error
                if case .timeout = error { break }
            }
        }
        throw lastError
    }

    private static func open(_ info: addrinfo, peer: String, deadline: Deadline) throws(RedisError) -> Int32 {
        let fd = socket(info.ai_family, info.ai_socktype, info.ai_protocol)
        guard fd >= 0 else { throw .connectionFailed(reason: "socket for \(peer): \(describeErrno(errno))") }
        // Close-on-exec: a child process must not inherit the connection.
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK)
        var one: Int32 = 1
        // Commands are small and each pipeline is one write: don't let Nagle hold it back.
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        #if canImport(Darwin)
        _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif

        if systemConnect(fd, info.ai_addr, info.ai_addrlen) != 0 {
            let code = errno
            guard code == EINPROGRESS || code == EINTR else {
                systemClose(fd)
                throw .connectionFailed(reason: "connect to \(peer): \(describeErrno(code))")
            }
            do {
                _ = try wait(fd, for: Int16(POLLOUT), until: deadline,
                             timeout: "no connection to \(peer) within \(deadline.budgetText)")
            } catch {
                systemClose(fd)
                throw error
            }
            var failure: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &length)
            if failure != 0 {
                systemClose(fd)
                throw .connectionFailed(reason: "connect to \(peer): \(describeErrno(failure))")
            }
        }
        // Blocking from now on, for the reads that wait (`SO_RCVTIMEO` bounds them); every other
        // call says `MSG_DONTWAIT`.
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) & ~O_NONBLOCK)
        var wait = timeval(tv_sec: 0, tv_usec: Self.readWaitMicroseconds)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    /// How long a read that waits blocks at most (rounded up by the kernel to its timer tick).
    #if canImport(Darwin)
    static let readWaitMicroseconds: Int32 = 1_000
    #else
    static let readWaitMicroseconds = 1_000
    #endif

    /// Whether the socket is idle as a healthy pooled connection is: nothing to read, no hang-up.
    /// A server that exited or closed the connection leaves it readable (EOF).
    var isQuiet: Bool {
        guard fd >= 0 else { return false }
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) == 0
    }

    /// Writes what the socket takes now of `bytes` from `offset`, without waiting: the count of
    /// bytes taken (0 when its buffer is full).
    func writeAvailable(_ bytes: [UInt8], from offset: Int) throws(RedisError) -> Int {
        guard offset < bytes.count else { return 0 }
        while true {
            let written = bytes.withUnsafeBytes { buffer in
                sendSome(fd, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if written >= 0 { return written }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return 0 }
            throw .connectionFailed(reason: "write to \(peer): \(describeErrno(code))")
        }
    }

    /// Reads what has arrived, without waiting, and hands it to `received`; `false` when
    /// nothing has. The peer closing the connection throws.
    func readAvailable(into received: (UnsafeRawBufferPointer) -> Void) throws(RedisError) -> Bool {
        try read(waiting: false, into: received)
    }

    /// Reads, waiting in the kernel for the first bytes for about a millisecond (one read instead
    /// of a poll and a read), and hands them to `received`; `false` when none came.
    func readWaiting(into received: (UnsafeRawBufferPointer) -> Void) throws(RedisError) -> Bool {
        try read(waiting: true, into: received)
    }

    private func read(waiting: Bool, into received: (UnsafeRawBufferPointer) -> Void) throws(RedisError) -> Bool {
        while true {
            let count = chunk.withUnsafeMutableBytes { recvSome(fd, $0.baseAddress!, $0.count, waiting: waiting) }
            if count > 0 {
                chunk.withUnsafeBytes { received(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
                return true
            }
            if count == 0 { throw .connectionFailed(reason: "\(peer) closed the connection") }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return false }
            throw .connectionFailed(reason: "read from \(peer): \(describeErrno(code))")
        }
    }

    /// Waits until the socket is ready for `events` or `instant` passes; the events ready (which
    /// may include errors and hang-ups, reported by the following read or write), or 0 when the
    /// wait ended first. Milliseconds are the granularity: a wait ends at most 1 ms late.
    func wait(for events: Int16, until instant: ContinuousClock.Instant) throws(RedisError) -> Int16 {
        while true {
            let left = instant - .now
            guard left > .zero else { return 0 }
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let result = poll(&entry, 1, Int32(clamping: left.wholeMillisecondsRoundedUp))
            if result > 0 {
                if entry.revents & Int16(POLLNVAL) != 0 { throw .connectionFailed(reason: "socket is not open") }
                return entry.revents
            }
            if result < 0, errno != EINTR { throw .connectionFailed(reason: "poll: \(describeErrno(errno))") }
        }
    }

    func close() {
        if fd >= 0 {
            systemClose(fd)
            fd = -1
        }
    }

    /// Polls `fd` for `events` until `deadline`; the returned events may include errors and
    /// hang-ups, which the following read or write reports with its errno.
    private static func wait(_ fd: Int32, for events: Int16, until deadline: Deadline,
                             timeout message: @autoclosure () -> String) throws(RedisError) -> Int16 {
        while true {
            let milliseconds = (deadline.instant - .now).wholeMillisecondsRoundedUp
            guard milliseconds > 0 else { throw .timeout(reason: message()) }
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let result = poll(&entry, 1, Int32(clamping: milliseconds))
            if result > 0 {
                if entry.revents & Int16(POLLNVAL) != 0 {
                    throw .connectionFailed(reason: "socket is not open")
                }
                return entry.revents
            }
            if result < 0, errno != EINTR {
                throw .connectionFailed(reason: "poll: \(describeErrno(errno))")
            }
        }
    }

}

extension Duration {
    /// Whole milliseconds, rounded up, so a wait never ends before its deadline.
    var wholeMillisecondsRoundedUp: Int64 {
        let (seconds, attoseconds) = components
        let millis = attoseconds / 1_000_000_000_000_000
        let rest = attoseconds % 1_000_000_000_000_000
        return seconds * 1000 + millis + (rest > 0 ? 1 : 0)
    }
}

/// Names the calling thread (15 bytes at most show), so the client's threads are recognisable in
/// `top -H`, `/proc/<pid>/task/*/comm` and debuggers.
func nameCurrentThread(_ name: String) {
    #if canImport(Darwin)
    _ = pthread_setname_np(name)
    #else
    // `pthread_setname_np` is not imported from glibc; the kernel's own file for it is the same.
    let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    systemClose(fd)
    #endif
}

// Free functions: inside `TCPSocket`, `read`, `write`, `close` and `connect` name its own methods.
private func sendSome(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Darwin)
    send(fd, bytes, count, MSG_DONTWAIT)
    #else
    // A peer that closed must cost an EPIPE error here, not a SIGPIPE for the process.
    send(fd, bytes, count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
    #endif
}

private func recvSome(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int, waiting: Bool) -> Int {
    #if canImport(Darwin)
    recv(fd, buffer, count, waiting ? 0 : MSG_DONTWAIT)
    #else
    recv(fd, buffer, count, waiting ? 0 : Int32(MSG_DONTWAIT))
    #endif
}

private func systemConnect(_ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>!, _ length: socklen_t) -> Int32 {
    connect(fd, address, length)
}

private func systemClose(_ fd: Int32) {
    _ = close(fd)
}
