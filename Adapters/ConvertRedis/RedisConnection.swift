/// One TCP connection to Redis, used by one thread at a time.
///
/// Connecting authenticates (`AUTH`) and selects the database (`SELECT`) as the configuration
/// says. ``send(_:)`` writes several commands in one write and reads all their replies. A
/// connection that saw a timeout, a transport error or bytes that are not RESP2 is broken: it is
/// closed at once and every later call fails, because replies could no longer be matched to
/// commands.
///
/// ```swift
/// let connection = try RedisConnection(configuration: RedisConfiguration(port: 6379))
/// let replies = try connection.send([["SET", .key("a"), "1"], ["GET", .key("a")]])
/// ```
package final class RedisConnection {
    /// Where the connection went, and the key prefix and timeouts it applies.
    package let configuration: RedisConfiguration
    private let socket: TCPSocket
    private var parser = RESPParser()
    /// Why the connection broke, once it has.
    package private(set) var failure: RedisError?

    /// Connects within `configuration.connectTimeout`, then authenticates and selects the
    /// database within `configuration.commandTimeout`.
    package init(configuration: RedisConfiguration) throws(RedisError) {
        self.configuration = configuration
        socket = try TCPSocket.connect(host: configuration.host, port: configuration.port,
                                       deadline: .after(configuration.connectTimeout))
        var setup: [RedisCommand] = []
        if let password = configuration.password {
            if let username = configuration.username {
                setup.append(["AUTH", .string(username), .string(password)])
            } else {
                setup.append(["AUTH", .string(password)])
            }
        }
        if configuration.database != 0 { setup.append(["SELECT", .integer(configuration.database)]) }
        guard !setup.isEmpty else { return }
        let replies = try send(setup)
        for (command, reply) in zip(setup, replies) {
            guard let message = reply.errorMessage else { continue }
            close()
            // An AUTH refusal is an authentication failure whatever the server's wording.
            if command.name == "AUTH" { throw .authenticationFailed(message: message) }
            throw RedisError.reply(message)
        }
    }

    deinit { socket.close() }

    /// Whether the connection can take commands.
    package var isOpen: Bool { failure == nil && socket.fd >= 0 }

    /// Whether the connection is open with nothing unexpected to read: a server that closed it
    /// or went away leaves it readable.
    var isReusable: Bool { isOpen && !parser.hasPendingInput && socket.isQuiet }

    /// Sends `commands` in one write and returns their replies in order; error replies are
    /// ``RESPValue/error(_:)`` values. Throws when the connection fails, and it is then closed.
    package func send(_ commands: [RedisCommand]) throws(RedisError) -> [RESPValue] {
        if let failure { throw .connectionFailed(reason: "connection closed after an earlier failure (\(failure))") }
        guard socket.fd >= 0 else { throw .connectionFailed(reason: "connection closed") }
        guard !commands.isEmpty else { return [] }
        var bytes: [UInt8] = []
        for command in commands { RESPEncoder.append(command, keyPrefix: configuration.keyPrefix, to: &bytes) }
        let deadline = Deadline.after(configuration.commandTimeout)
        do {
            try socket.write(bytes, until: deadline) { parser.append($0) }
            var replies: [RESPValue] = []
            replies.reserveCapacity(commands.count)
            while replies.count < commands.count {
                if let reply = try parser.next() {
                    replies.append(reply)
                } else {
                    try socket.read(until: deadline) { parser.append($0) }
                }
            }
            return replies
        } catch {
            failure = error
            socket.close()
            throw error
        }
    }

    /// Closes the connection; later calls fail.
    package func close() {
        if failure == nil { failure = .connectionFailed(reason: "connection closed") }
        socket.close()
    }
}
