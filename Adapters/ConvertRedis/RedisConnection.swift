#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One connection to Redis (a stream of its ``RedisTransport``), used by one holder at a time.
///
/// Connecting authenticates (`AUTH`) and selects the database (`SELECT`) as the configuration
/// says, then sends the extra setup commands given, all in one round trip. ``send(_:)`` writes
/// several commands in one write and reads all their replies. A connection that saw a
/// timeout, a transport error or bytes that are not RESP2 is broken: it is closed at once and
/// every later call fails, because replies could no longer be matched to commands.
///
/// Besides the blocking ``send(_:)``, an exchange can be driven without waiting: ``begin(_:)``
/// encodes the commands, ``advance(_:)`` writes and reads what the socket allows, and
/// ``wait(until:)`` polls for more; the client runs an exchange on the calling thread and hands
/// what is left to its I/O thread when the reply is slow.
///
/// ```swift
/// let connection = try RedisConnection(configuration: RedisConfiguration(port: 6379))
/// let replies = try connection.send([["SET", .key("a"), "1"], ["GET", .key("a")]])
/// ```
package final class RedisConnection {
    /// Where the connection went, and the key prefix and timeouts it applies.
    package let configuration: RedisConfiguration
    private let socket: ConnectionStream
    private var parser = RESPParser()
    /// Why the connection broke, once it has.
    package private(set) var failure: RedisError?

    /// The exchange in progress: encoded commands, how much of them is written, the replies
    /// expected and those read.
    private var output: [UInt8] = []
    private var written = 0
    private var expected = 0
    private var replies: [RESPValue] = []

    /// Connects within `configuration.connectTimeout`, then authenticates, selects the database
    /// and sends `setup` within `configuration.commandTimeout`; the replies to `setup` are in
    /// ``setupReplies`` (error replies included).
    /// A configuration asking for TLS is refused before any socket is opened unless `transport`
    /// encrypts.
    package init(configuration: RedisConfiguration, transport: any RedisTransport = RedisPlainTransport(),
                 setup extra: [RedisCommand] = []) throws(RedisError) {
        guard !configuration.tls || transport.encrypts else { throw RedisError.plaintextOnly(configuration) }
        self.configuration = configuration
        socket = ConnectionStream(try transport.connect(configuration, deadline: .now + configuration.connectTimeout))
        var setup: [RedisCommand] = []
        if let password = configuration.password {
            if let username = configuration.username {
                setup.append(["AUTH", .string(username), .string(password)])
            } else {
                setup.append(["AUTH", .string(password)])
            }
        }
        if configuration.database != 0 { setup.append(["SELECT", .integer(configuration.database)]) }
        let own = setup.count
        setup += extra
        guard !setup.isEmpty else { return }
        let replies = try send(setup)
        for (command, reply) in zip(setup.prefix(own), replies) {
            guard let message = reply.errorMessage else { continue }
            close()
            // An AUTH refusal is an authentication failure whatever the server's wording.
            if command.name == "AUTH" { throw .authenticationFailed(message: message) }
            throw RedisError.reply(message)
        }
        setupReplies = Array(replies.dropFirst(own))
    }

    deinit { socket.close() }

    /// The replies to the extra setup commands, in order.
    package private(set) var setupReplies: [RESPValue] = []

    /// `host:port`, for messages.
    var peer: String { socket.peer }

    /// Whether the connection can take commands.
    package var isOpen: Bool { failure == nil && socket.descriptor >= 0 }

    /// Whether the connection is open with nothing unexpected to read: a server that closed it
    /// or went away leaves it readable.
    var isReusable: Bool { isOpen && expected == 0 && !parser.hasPendingInput && socket.isQuiet }

    /// Sends `commands` in one write and returns their replies in order, within
    /// `configuration.commandTimeout`; error replies are ``RESPValue/error(_:)`` values. Throws
    /// when the connection fails, and it is then closed.
    package func send(_ commands: [RedisCommand]) throws(RedisError) -> [RESPValue] {
        try send(commands, until: .now + configuration.commandTimeout, budget: configuration.commandTimeout)
    }

    /// ``send(_:)`` with a deadline of the caller's.
    func send(_ commands: [RedisCommand], until deadline: ContinuousClock.Instant, budget: Duration) throws(RedisError) -> [RESPValue] {
        guard !commands.isEmpty else { return [] }
        try begin(commands)
        var readable = false
        while try !advance(readable ? .available : .none) {
            readable = true
            guard try wait(until: deadline) else {
                let error = RedisError.timeout(reason: "no reply from \(peer) within \(budget.wholeMillisecondsRoundedUp) ms")
                fail(error)
                throw error
            }
        }
        return takeReplies()
    }

    // MARK: An exchange driven step by step

    /// Starts an exchange: encodes `commands` (with the key prefix) to be written.
    func begin(_ commands: [RedisCommand]) throws(RedisError) {
        try checkOpen()
        output.removeAll(keepingCapacity: output.capacity <= 256 * 1024)
        for command in commands { RESPEncoder.append(command, keyPrefix: configuration.keyPrefix, to: &output) }
        start(expecting: commands.count)
    }

    /// Starts an exchange of commands already encoded (with this connection's key prefix).
    func begin(_ encoded: EncodedCommands) throws(RedisError) {
        try checkOpen()
        output = encoded.bytes
        start(expecting: encoded.count)
    }

    private func checkOpen() throws(RedisError) {
        if let failure { throw .connectionFailed(reason: "connection closed after an earlier failure (\(failure))") }
        guard socket.descriptor >= 0 else { throw .connectionFailed(reason: "connection closed") }
    }

    private func start(expecting count: Int) {
        written = 0
        expected = count
        replies = []
        replies.reserveCapacity(count)
    }

    /// How ``advance(_:)`` reads.
    enum Reading {
        /// Only bytes already received are parsed: right after the commands went out, a read
        /// would find nothing.
        case none
        /// One read of what has arrived (a poll said the socket is readable).
        case available
        /// One read that waits in the kernel for about a millisecond for the first bytes: the
        /// reply to a short command, at the cost of one system call instead of a poll and a read.
        case waiting
    }

    /// Writes what the socket takes and parses what has arrived, reading as `reading` says;
    /// `true` once every reply of the exchange is in. A failure closes the connection and
    /// throws.
    func advance(_ reading: Reading = .available) throws(RedisError) -> Bool {
        do {
            if written < output.count {
                written += try socket.writeAvailable(output, from: written)
            }
            var read = reading
            while replies.count < expected {
                if let reply = try parser.next() {
                    replies.append(reply)
                    continue
                }
                switch read {
                case .none:
                    break
                case .available:
                    guard try socket.readAvailable(into: { parser.append($0) }) else { break }
                case .waiting:
                    // Not while commands are left to write: the reply cannot be complete.
                    guard written == output.count, try socket.readWaiting(into: { parser.append($0) }) else { break }
                }
                guard read != .none else { break }
                // One read per call: a second would most often find nothing.
                read = .none
            }
            return replies.count == expected && written == output.count
        } catch {
            fail(error)
            throw error
        }
    }

    /// Whether commands of the exchange are left to write.
    var isWriting: Bool { written < output.count }

    /// The poll events the exchange waits for: readable, and writable while commands are left
    /// to write.
    var pollEvents: Int16 { written < output.count ? Int16(POLLIN) | Int16(POLLOUT) : Int16(POLLIN) }

    /// The socket, for the I/O thread's poll.
    var descriptor: Int32 { socket.descriptor }

    /// Waits until the socket can make progress or `instant` passes; `false` when it passed.
    func wait(until instant: ContinuousClock.Instant) throws(RedisError) -> Bool {
        do {
            return try socket.wait(for: pollEvents, until: instant)
        } catch {
            fail(error)
            throw error
        }
    }

    /// When the last exchange ended (or the connection was made).
    private(set) var lastUsed = ContinuousClock.now

    /// Whether the connection can be lent without asking the kernel: it ended an exchange less
    /// than `recent` ago (a server that closed it since fails that exchange instead), or it is
    /// ``isReusable``.
    func isSound(recent: Duration) -> Bool {
        guard isOpen, expected == 0, !parser.hasPendingInput else { return false }
        return ContinuousClock.now - lastUsed < recent || socket.isQuiet
    }

    /// The replies of the finished exchange; the connection is ready for the next one.
    func takeReplies() -> [RESPValue] {
        lastUsed = .now
        defer {
            replies = []
            expected = 0
            written = 0
            if output.capacity > 256 * 1024 { output = [] } else { output.removeAll(keepingCapacity: true) }
        }
        return replies
    }

    /// Marks the connection broken by `error` and closes it.
    func fail(_ error: RedisError) {
        if failure == nil { failure = error }
        socket.close()
    }

    /// Closes the connection; later calls fail.
    package func close() {
        if failure == nil { failure = .connectionFailed(reason: "connection closed") }
        socket.close()
    }
}
