import ConvertEnvironment
import ConvertSynchronization
import Dispatch
import Foundation

/// The Redis connection a ``RedisVisitorBackend`` uses: a thread-safe pool of a few TCP
/// connections to one server.
///
/// **Every call is bounded by `commandTimeout`** (250 ms by default), all of it: waiting for a
/// pooled connection, writing the commands, reading every reply. A call that cannot finish in
/// time fails with ``RedisError/timeout(reason:)``; none waits longer.
///
/// **Calls run on the calling thread while that is quick.** An `async` call that finds an idle
/// connection writes its commands and waits for the reply on the calling thread, in one read
/// the kernel gives up on after about a millisecond (its timer tick: a few milliseconds; not
/// when round trips average more than 250 µs, nor while calls are queued), so a typical call
/// costs three system calls and no thread hop; a slower reply is left to the client's I/O
/// thread and the caller suspends. A call that finds no idle connection is queued and run by
/// the I/O thread on the next connection to come free, so no connection waits for a busy
/// caller. The blocking calls (``ping()``, and the claim ``RedisVisitorBackend`` makes while a
/// decision is answered) wait on the calling thread, within the same bound.
///
/// **Threads and connections are bounded.** Connections are opened on demand up to `poolSize`
/// by one connector thread, never by a caller; the client adds at most two threads (the
/// connector and the I/O thread, named `Redis.cn.N` and `Redis.io.N`) whatever the load, and
/// holds at most `poolSize` connections (and one probe while the server is unreachable).
///
/// **An unreachable server costs nothing per call.** A refused or broken connection, or a reply
/// that does not come within the bound, makes the server *unavailable*: idle connections are
/// closed, calls waiting for one fail, and later calls fail at once with
/// ``RedisError/connectionFailed(reason:)`` naming the cause and the next attempt. In the
/// background the client probes the server (a new connection answering `PING`) after the
/// reconnect backoff, doubling per failed probe up to its maximum, measured on the injected
/// clock; the first probe that succeeds makes it available again. Keys get `keyPrefix`.
///
/// **Plain TCP unless given a TLS transport.** Connections are opened by its ``RedisTransport``:
/// ``RedisPlainTransport`` by default; `RedisTLSTransport` (package `ConvertRedisTLS`)
/// encrypts. A configuration with ``RedisConfiguration/tls`` set (a `rediss://` URL) and a
/// transport that does not encrypt is refused: every call fails at once with
/// ``RedisError/tlsUnavailable(reason:)`` and no connection is opened, so nothing is ever sent in
/// the clear in its place.
///
/// ```swift
/// let redis = RedisClient(configuration: RedisConfiguration(host: "10.0.0.5", keyPrefix: "convert:"))
/// try await redis.ping()   // fails fast, naming the cause, when the server is unreachable
/// let backend = RedisVisitorBackend(client: redis)
/// // …
/// redis.close()            // at shutdown, after the SDK's
/// ```
public final class RedisClient: Sendable {
    /// Where the client connects, its timeouts, pool size and key prefix.
    public let configuration: RedisConfiguration
    let pool: RedisPool

    /// A client for `configuration` whose connections `transport` opens (plain TCP by default);
    /// connects lazily, on the first call. The reconnect backoff is measured on `clock`.
    public init(configuration: RedisConfiguration, transport: any RedisTransport = RedisPlainTransport(),
                clock: any SleepClock = .continuous) {
        self.configuration = configuration
        pool = RedisPool(configuration: configuration, transport: transport, clock: clock)
    }

    deinit { pool.close() }

    /// Closes idle connections, fails calls waiting for a connection, stops the background probe
    /// and threads, and makes later calls fail with ``RedisError/clientClosed``; connections in
    /// use close when their call ends.
    public func close() {
        pool.close()
    }

    /// The suffix of this client's thread names (`Redis.io.N`, `Redis.cn.N`).
    package var threadNumber: Int { pool.number }

    /// Whether the server is taken as reachable: `false` from a transport failure until a
    /// background probe succeeds (calls meanwhile fail at once), and always for a configuration
    /// asking for TLS with a transport that does not encrypt, which this client refuses (see
    /// ``RedisError/tlsUnavailable(reason:)``).
    public var isAvailable: Bool { pool.isAvailable }

    /// Calls `handler` (on the thread that noticed, outside the client's locks) when the server
    /// becomes unavailable or available again, or loses its data set (see
    /// ``watchDataSet(markerKey:)``).
    package func subscribe(_ handler: @escaping @Sendable (RedisClientEvent) -> Void) {
        pool.subscribe(handler)
    }

    /// Checks on every new connection (in its setup round trip) that the key `markerKey` still
    /// holds the value this client saw last, creating it when absent; a marker gone or replaced
    /// means the server lost its data since (a restart without persistence, a flush), published
    /// as ``RedisClientEvent/dataLost``. A restart always breaks the connections, so the next
    /// connection after it checks.
    package func watchDataSet(markerKey: String) {
        pool.watchDataSet(markerKey: markerKey)
    }

    // MARK: Synchronous calls

    /// Sends one command; an error reply throws ``RedisError/serverError(message:)``.
    @discardableResult
    package func send(_ command: RedisCommand) throws(RedisError) -> RESPValue {
        let reply = try perform([command])[0]
        if let message = reply.errorMessage { throw RedisError.reply(message) }
        return reply
    }

    /// Sends `commands` in one write on one connection and returns one result per command: the
    /// reply, or the server's error for that command. Throws only when the connection fails.
    package func pipeline(_ commands: [RedisCommand]) throws(RedisError) -> [Result<RESPValue, RedisError>] {
        try perform(commands).map(Self.result)
    }

    /// `PING`; throws unless the server answers `PONG`.
    public func ping() throws(RedisError) {
        let reply = try send(.ping)
        guard reply.stringValue == "PONG" else { throw .protocolError(reason: "PING answered a \(reply.summary)") }
    }

    /// `HGETALL`: every field of the hash at `key` (empty when the key does not exist).
    package func hgetall(_ key: String) throws(RedisError) -> [String: Data] {
        try send(.hgetall(key)).hashFields()
    }

    /// `HSET`: writes `fields` into the hash at `key`; returns how many fields were new.
    @discardableResult
    package func hset(_ key: String, _ fields: [String: Data]) throws(RedisError) -> Int {
        // Redis rejects an HSET without fields; writing nothing is not an error.
        guard !fields.isEmpty else { return 0 }
        return try integer(send(.hset(key, fields)), "HSET")
    }

    /// `HSET` with text values (stored as UTF-8).
    @discardableResult
    package func hset(_ key: String, _ fields: [String: String]) throws(RedisError) -> Int {
        try hset(key, fields.mapValues { Data($0.utf8) })
    }

    /// `HSETNX`: sets `field` only when it is absent; `true` when this call set it.
    @discardableResult
    package func hsetnx(_ key: String, _ field: String, _ value: Data) throws(RedisError) -> Bool {
        try integer(send(.hsetnx(key, field, value)), "HSETNX") == 1
    }

    /// `HSETNX` with a text value.
    @discardableResult
    package func hsetnx(_ key: String, _ field: String, _ value: String) throws(RedisError) -> Bool {
        try hsetnx(key, field, Data(value.utf8))
    }

    /// Sets the time to live of `key` (millisecond precision); `false` when the key does not exist.
    @discardableResult
    package func expire(_ key: String, ttl: Duration) throws(RedisError) -> Bool {
        try integer(send(.expire(key, ttl: ttl)), "PEXPIRE") == 1
    }

    /// `DEL`: returns how many of `keys` existed.
    @discardableResult
    package func del(_ keys: [String]) throws(RedisError) -> Int {
        guard !keys.isEmpty else { return 0 }
        return try integer(send(.del(keys)), "DEL")
    }

    /// `DEL` of the given keys.
    @discardableResult
    package func del(_ keys: String...) throws(RedisError) -> Int { try del(keys) }

    // MARK: Exchanges

    static func result(_ reply: RESPValue) -> Result<RESPValue, RedisError> {
        if let message = reply.errorMessage { return .failure(RedisError.reply(message)) }
        return .success(reply)
    }

    func integer(_ reply: RESPValue, _ command: String) throws(RedisError) -> Int {
        guard let value = reply.intValue else { throw .protocolError(reason: "\(command) answered a \(reply.summary)") }
        return Int(value)
    }

    /// Runs `commands` on a pooled connection, blocking the calling thread until the replies are
    /// in or the call's deadline passes: on this thread when a connection is idle, else queued
    /// for the I/O thread.
    func perform(_ commands: [RedisCommand]) throws(RedisError) -> [RESPValue] {
        guard !commands.isEmpty else { return [] }
        return try perform(.commands(commands), count: commands.count, deadline: .now + configuration.commandTimeout)
    }

    /// What a call sends: commands, or commands already encoded.
    enum Payload: Sendable {
        case commands([RedisCommand])
        case encoded(EncodedCommands)

        func begin(on connection: RedisConnection) throws(RedisError) {
            switch self {
            case .commands(let commands): try connection.begin(commands)
            case .encoded(let encoded): try connection.begin(encoded)
            }
        }

        func encoded(keyPrefix: String) -> EncodedCommands {
            switch self {
            case .commands(let commands): EncodedCommands(commands, keyPrefix: keyPrefix)
            case .encoded(let encoded): encoded
            }
        }
    }

    /// Runs `payload` (`count` commands) on a pooled connection, within `deadline`.
    func perform(_ payload: Payload, count: Int, deadline: ContinuousClock.Instant) throws(RedisError) -> [RESPValue] {
        let lease: Lease
        switch pool.checkoutNow() {
        case .lease(let taken): lease = taken
        case .fail(let error): throw error
        case .wait: return try performQueued(payload.encoded(keyPrefix: configuration.keyPrefix), deadline: deadline)
        }
        let started = ContinuousClock.now
        let connection = lease.connection
        do throws(RedisError) {
            try payload.begin(on: connection)
            var done = try connection.advance(.none)
            while !done {
                guard ContinuousClock.now < deadline else { throw timedOut(connection, started: started, deadline: deadline) }
                if connection.isWriting || deadline - .now < Self.preciseWaitBelow {
                    // A large pipeline the socket has not taken yet, or a deadline close enough
                    // that a kernel read timeout (a timer tick or two) would overshoot it: poll.
                    guard try connection.wait(until: deadline) else { throw timedOut(connection, started: started, deadline: deadline) }
                    done = try connection.advance(.available)
                } else {
                    // The reply, waited for in the kernel (one read, not a poll and a read).
                    done = try connection.advance(.waiting)
                }
            }
        } catch {
            pool.finish(lease, started: started, result: .failure(error))
            throw error
        }
        return finished(lease, count, started: started, slow: false)
    }

    /// Runs `commands` on a pooled connection: on the calling thread while the reply is quick
    /// (when a connection is idle), else on the I/O thread while the caller is suspended, until
    /// the replies are in or the call's deadline passes.
    func perform(_ commands: [RedisCommand], slow: Bool = false) async throws(RedisError) -> [RESPValue] {
        guard !commands.isEmpty else { return [] }
        return try await perform(.commands(commands), count: commands.count, slow: slow, deadline: .now + configuration.commandTimeout)
    }

    /// ``perform(_:slow:)`` of commands already encoded (a ``RESPWriter``'s, with this client's
    /// key prefix).
    func perform(_ encoded: EncodedCommands, slow: Bool = false) async throws(RedisError) -> [RESPValue] {
        guard encoded.count > 0 else { return [] }
        return try await perform(.encoded(encoded), count: encoded.count, slow: slow, deadline: .now + configuration.commandTimeout)
    }

    /// Runs `payload` (`count` commands) on a pooled connection, within `deadline`, suspending
    /// the caller when the reply is not quick.
    func perform(_ payload: Payload, count: Int, slow: Bool, deadline: ContinuousClock.Instant) async throws(RedisError) -> [RESPValue] {
        let pool = self.pool
        let lease: Lease
        switch pool.checkoutNow() {
        case .lease(let taken): lease = taken
        case .fail(let error): throw error
        case .wait:
            let encoded = payload.encoded(keyPrefix: configuration.keyPrefix)
            let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<[RESPValue], RedisError>, Never>) in
                pool.submit(encoded, deadline: deadline) { continuation.resume(returning: $0) }
            }
            return try result.get()
        }
        let started = ContinuousClock.now
        let connection = lease.connection
        do throws(RedisError) {
            try payload.begin(on: connection)
            if try connection.advance(.none) { return finished(lease, count, started: started, slow: slow) }
            // The reply waited for in the kernel for a millisecond (one read), when it is likely
            // to come that soon; else, or when it did not, the I/O thread waits for it.
            if !slow && !connection.isWriting && pool.waitsOnCaller, try connection.advance(.waiting) {
                return finished(lease, count, started: started, slow: slow)
            }
        } catch {
            pool.finish(lease, started: started, result: .failure(error))
            throw error
        }
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<[RESPValue], RedisError>, Never>) in
            pool.reactor.add(RedisReactor.Exchange(lease: lease, commands: nil, started: started, deadline: deadline,
                                                   timed: !slow && count == 1,
                                                   done: { continuation.resume(returning: $0) }), pool: pool)
        }
        return try result.get()
    }

    private func finished(_ lease: Lease, _ count: Int, started: ContinuousClock.Instant, slow: Bool) -> [RESPValue] {
        let replies = lease.connection.takeReplies()
        if !slow, count == 1 { pool.noteRoundTrip(.now - started) }
        pool.release(lease)
        return replies
    }

    private func timedOut(_ connection: RedisConnection, started: ContinuousClock.Instant,
                          deadline: ContinuousClock.Instant) -> RedisError {
        let error = RedisError.timeout(reason: Self.noReply(from: connection.peer, started: started, deadline: deadline))
        connection.fail(error)
        return error
    }

    /// Why a call that began at `started` had no reply by `deadline`. A call whose time ran out
    /// before it was sent (its caller waited for a thread) is still sent, since a quick reply
    /// may come in the caller's short wait; it is said to be late rather than given a negative
    /// budget.
    static func noReply(from peer: String, started: ContinuousClock.Instant, deadline: ContinuousClock.Instant) -> String {
        let budget = deadline - started
        guard budget <= .zero else { return "no reply from \(peer) within \(budget.wholeMillisecondsRoundedUp) ms" }
        return "no reply from \(peer): the call's time ran out \((started - deadline).wholeMillisecondsRoundedUp) ms before it was sent"
    }

    /// A blocking call queued for the I/O thread: waits for its replies until `deadline` (and a
    /// moment more for an exchange the I/O thread is finishing, which it ends at that deadline).
    private func performQueued(_ commands: EncodedCommands, deadline: ContinuousClock.Instant) throws(RedisError) -> [RESPValue] {
        let box = Locked<Result<[RESPValue], RedisError>?>(nil)
        let signal = DispatchSemaphore(value: 0)
        let id = pool.submit(commands, deadline: deadline) { result in
            box.set(result)
            signal.signal()
        }
        if signal.wait(timeout: Self.dispatchTime(deadline)) == .timedOut {
            if pool.cancel(id) { throw pool.poolTimeout() }
            // Started on a connection meanwhile: the I/O thread ends it at the deadline.
            if signal.wait(timeout: Self.dispatchTime(deadline + Self.lateReplyGrace)) == .timedOut {
                throw RedisError.timeout(reason: "no reply within \(configuration.commandTimeout.wholeMillisecondsRoundedUp) ms")
            }
        }
        guard let result = box.value else { throw pool.poolTimeout() }
        return try result.get()
    }

    /// Below this much time left, a blocking call waits with `poll` (precise to the millisecond)
    /// rather than a kernel read timeout (rounded up to the timer tick, 4 ms and more).
    private static let preciseWaitBelow: Duration = .milliseconds(20)

    /// How long past its deadline a blocking call waits for the I/O thread to end its exchange.
    private static let lateReplyGrace: Duration = .milliseconds(20)

    private static func dispatchTime(_ instant: ContinuousClock.Instant) -> DispatchTime {
        .now() + .nanoseconds(Int(clamping: max(instant - .now, .zero).wholeNanoseconds))
    }
}

extension Duration {
    /// The duration in whole nanoseconds (saturating).
    var wholeNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? (seconds < 0 ? .min : .max) : product &+ attoseconds / 1_000_000_000
    }
}
