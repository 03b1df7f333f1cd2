import ConvertEnvironment
import ConvertSynchronization
import Dispatch
import Foundation

/// The Redis connection a ``RedisVisitorBackend`` uses: a thread-safe pool of a few TCP
/// connections to one server.
///
/// ``ping()`` blocks the calling thread for at most the configured timeouts; call it off Swift
/// concurrency's cooperative pool. Its `async` overload, like every call the backend makes, runs
/// on the client's own dispatch queue, so awaiting it never blocks a cooperative thread.
///
/// Connections are made on demand up to `poolSize`; a broken one is dropped and replaced on a
/// later call. After a failed connect the client does not try again until the reconnect backoff
/// has passed (doubling per failure up to its maximum): meanwhile calls fail at once with
/// ``RedisError/connectionFailed(reason:)``, so a dead server costs a fast failure rather than
/// a connect timeout per call. Keys get `keyPrefix`.
///
/// ```swift
/// let redis = RedisClient(configuration: RedisConfiguration(host: "10.0.0.5", keyPrefix: "convert:"))
/// try await redis.ping()   // fails fast, naming the cause, when the server is unreachable
/// let backend = RedisVisitorBackend(client: redis)
/// ```
public final class RedisClient: Sendable {
    /// Where the client connects, its timeouts, pool size and key prefix.
    public let configuration: RedisConfiguration

    // `@unchecked`: a connection is not Sendable, but it is used only by the one caller that took
    // it out of the pool; while parked here it is touched only under the pool's lock.
    private struct PoolState: @unchecked Sendable {
        var idle: [RedisConnection] = []
        var closed = false
        var consecutiveConnectFailures = 0
        /// No connect attempt before this instant of ``clock``.
        var retryAt: Duration?
        var lastConnectFailure: RedisError?
    }

    private enum Step {
        case use(RedisConnection)
        case connect
        case fail(RedisError)
    }

    private let state = Locked(PoolState())
    /// One permit per connection the pool may hold.
    private let permits: DispatchSemaphore
    /// Where the `async` overloads run their blocking I/O.
    private let queue = DispatchQueue(label: "ConvertRedis.client", attributes: .concurrent)
    /// Measures the reconnect backoff (socket deadlines are the kernel's, on the system clock).
    private let clock: any SleepClock
    /// The waits between connect attempts.
    private let reconnectBackoff: Backoff

    /// A client for `configuration`; connects lazily, on the first call. The reconnect backoff
    /// is measured on `clock`.
    public init(configuration: RedisConfiguration, clock: any SleepClock = .continuous) {
        self.configuration = configuration
        self.clock = clock
        reconnectBackoff = Backoff(initial: configuration.reconnectBackoffInitial, maximum: configuration.reconnectBackoffMax)
        permits = DispatchSemaphore(value: max(configuration.poolSize, 1))
    }

    /// Closes idle connections and makes later calls fail with ``RedisError/clientClosed``;
    /// connections in use close when their call ends.
    public func close() {
        let idle = state.withValue { state in
            state.closed = true
            defer { state.idle = [] }
            return state.idle
        }
        idle.forEach { $0.close() }
    }

    // MARK: Synchronous calls

    /// Sends one command; an error reply throws ``RedisError/serverError(message:)``.
    @discardableResult
    package func send(_ command: RedisCommand) throws(RedisError) -> RESPValue {
        let reply = try withConnection { connection throws(RedisError) in try connection.send([command])[0] }
        if let message = reply.errorMessage { throw RedisError.reply(message) }
        return reply
    }

    /// Sends `commands` in one write on one connection and returns one result per command: the
    /// reply, or the server's error for that command. Throws only when the connection fails.
    package func pipeline(_ commands: [RedisCommand]) throws(RedisError) -> [Result<RESPValue, RedisError>] {
        guard !commands.isEmpty else { return [] }
        let replies = try withConnection { connection throws(RedisError) in try connection.send(commands) }
        return replies.map { reply in
            if let message = reply.errorMessage { return .failure(RedisError.reply(message)) }
            return .success(reply)
        }
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

    /// `EVAL`: runs a Lua script with `keys` (prefixed, as `KEYS`) and `args` (as `ARGV`).
    @discardableResult
    package func eval(_ script: String, keys: [String] = [], args: [RedisArgument] = []) throws(RedisError) -> RESPValue {
        try send(.eval(script, keys: keys, args: args))
    }

    // MARK: Asynchronous calls (the same, run on the client's queue)

    /// ``send(_:)`` without blocking the caller's thread.
    @discardableResult
    package func send(_ command: RedisCommand) async throws(RedisError) -> RESPValue {
        try await offload { client throws(RedisError) in try client.send(command) }
    }

    /// ``pipeline(_:)`` without blocking the caller's thread.
    package func pipeline(_ commands: [RedisCommand]) async throws(RedisError) -> [Result<RESPValue, RedisError>] {
        try await offload { client throws(RedisError) in try client.pipeline(commands) }
    }

    /// ``ping()`` without blocking the caller's thread.
    public func ping() async throws(RedisError) {
        try await offload { client throws(RedisError) in try client.ping() }
    }

    /// ``hgetall(_:)`` without blocking the caller's thread.
    package func hgetall(_ key: String) async throws(RedisError) -> [String: Data] {
        try await offload { client throws(RedisError) in try client.hgetall(key) }
    }

    /// ``hset(_:_:)`` without blocking the caller's thread.
    @discardableResult
    package func hset(_ key: String, _ fields: [String: Data]) async throws(RedisError) -> Int {
        try await offload { client throws(RedisError) in try client.hset(key, fields) }
    }

    /// ``hset(_:_:)`` with text values, without blocking the caller's thread.
    @discardableResult
    package func hset(_ key: String, _ fields: [String: String]) async throws(RedisError) -> Int {
        try await offload { client throws(RedisError) in try client.hset(key, fields) }
    }

    /// ``hsetnx(_:_:_:)`` without blocking the caller's thread.
    @discardableResult
    package func hsetnx(_ key: String, _ field: String, _ value: Data) async throws(RedisError) -> Bool {
        try await offload { client throws(RedisError) in try client.hsetnx(key, field, value) }
    }

    /// ``hsetnx(_:_:_:)`` with a text value, without blocking the caller's thread.
    @discardableResult
    package func hsetnx(_ key: String, _ field: String, _ value: String) async throws(RedisError) -> Bool {
        try await offload { client throws(RedisError) in try client.hsetnx(key, field, value) }
    }

    /// ``expire(_:ttl:)`` without blocking the caller's thread.
    @discardableResult
    package func expire(_ key: String, ttl: Duration) async throws(RedisError) -> Bool {
        try await offload { client throws(RedisError) in try client.expire(key, ttl: ttl) }
    }

    /// ``del(_:)`` without blocking the caller's thread.
    @discardableResult
    package func del(_ keys: [String]) async throws(RedisError) -> Int {
        try await offload { client throws(RedisError) in try client.del(keys) }
    }

    /// ``del(_:)`` of the given keys, without blocking the caller's thread.
    @discardableResult
    package func del(_ keys: String...) async throws(RedisError) -> Int {
        try await offload { client throws(RedisError) in try client.del(keys) }
    }

    /// ``eval(_:keys:args:)`` without blocking the caller's thread.
    @discardableResult
    package func eval(_ script: String, keys: [String] = [], args: [RedisArgument] = []) async throws(RedisError) -> RESPValue {
        try await offload { client throws(RedisError) in try client.eval(script, keys: keys, args: args) }
    }

    // MARK: Pool

    private func offload<T: Sendable>(_ body: @escaping @Sendable (RedisClient) throws(RedisError) -> T) async throws(RedisError) -> T {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, RedisError>, Never>) in
            queue.async { continuation.resume(returning: Result { () throws(RedisError) -> T in try body(self) }) }
        }
        return try result.get()
    }

    private func integer(_ reply: RESPValue, _ command: String) throws(RedisError) -> Int {
        guard let value = reply.intValue else { throw .protocolError(reason: "\(command) answered a \(reply.summary)") }
        return Int(value)
    }

    private func withConnection<T>(_ body: (RedisConnection) throws(RedisError) -> T) throws(RedisError) -> T {
        let connection = try checkout()
        defer { checkin(connection) }
        return try body(connection)
    }

    private func checkout() throws(RedisError) -> RedisConnection {
        if state.value.closed { throw .clientClosed }
        let wait = configuration.commandTimeout.wholeMillisecondsRoundedUp
        guard permits.wait(timeout: .now() + .milliseconds(Int(clamping: wait))) == .success else {
            throw .timeout(reason: "all \(max(configuration.poolSize, 1)) pooled connections stayed busy for \(wait) ms")
        }
        do {
            return try acquire()
        } catch {
            permits.signal()
            throw error
        }
    }

    /// An idle connection that is still sound, else a new one unless the backoff forbids it.
    private func acquire() throws(RedisError) -> RedisConnection {
        while true {
            let step = state.withValue { state -> Step in
                if state.closed { return .fail(.clientClosed) }
                if let idle = state.idle.popLast() { return .use(idle) }
                let now = clock.elapsed
                if let retryAt = state.retryAt {
                    if now < retryAt {
                        return .fail(.connectionFailed(reason: "server unavailable, next connect attempt in "
                            + "\((retryAt - now).wholeMillisecondsRoundedUp) ms (last attempt: "
                            + "\(state.lastConnectFailure.map(Self.reason) ?? "failed"))"))
                    }
                    // This caller probes; the others keep failing fast until it is done.
                    state.retryAt = now + reconnectBackoff.delay(afterFailures: state.consecutiveConnectFailures)
                }
                return .connect
            }
            switch step {
            case .fail(let error):
                throw error
            case .use(let connection):
                if connection.isReusable { return connection }
                connection.close()
            case .connect:
                do {
                    let connection = try RedisConnection(configuration: configuration)
                    state.withValue { state in
                        state.consecutiveConnectFailures = 0
                        state.retryAt = nil
                        state.lastConnectFailure = nil
                    }
                    return connection
                } catch {
                    switch error {
                    case .connectionFailed, .timeout:
                        state.withValue { state in
                            state.consecutiveConnectFailures += 1
                            state.retryAt = clock.elapsed + reconnectBackoff.delay(afterFailures: state.consecutiveConnectFailures)
                            state.lastConnectFailure = error
                        }
                    default:
                        break
                    }
                    throw error
                }
            }
        }
    }

    private func checkin(_ connection: RedisConnection) {
        let keep = connection.isOpen
        let discard = state.withValue { state -> RedisConnection? in
            guard keep, !state.closed else { return connection }
            state.idle.append(connection)
            return nil
        }
        discard?.close()
        permits.signal()
    }

    private static func reason(_ error: RedisError) -> String {
        switch error {
        case .connectionFailed(let reason), .timeout(let reason), .protocolError(let reason): reason
        default: error.description
        }
    }
}
