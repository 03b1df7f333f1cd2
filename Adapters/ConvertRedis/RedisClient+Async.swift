import Foundation

/// The client's calls that suspend instead of blocking the caller's thread for long.
extension RedisClient {
    /// ``send(_:)`` without blocking the caller's thread.
    @discardableResult
    package func send(_ command: RedisCommand) async throws(RedisError) -> RESPValue {
        let reply = try await perform([command])[0]
        if let message = reply.errorMessage { throw RedisError.reply(message) }
        return reply
    }

    /// ``pipeline(_:)`` without blocking the caller's thread. `slow`: the replies are expected
    /// to take longer than a round trip (a large batch), so the caller suspends at once instead
    /// of waiting on its thread first.
    package func pipeline(_ commands: [RedisCommand], slow: Bool = false) async throws(RedisError) -> [Result<RESPValue, RedisError>] {
        try await perform(commands, slow: slow).map(Self.result)
    }

    /// Commands a ``RESPWriter`` wrote (with this client's key prefix), in one write: one result
    /// per command, as ``pipeline(_:slow:)``.
    package func pipeline(_ encoded: EncodedCommands, slow: Bool = false) async throws(RedisError) -> [Result<RESPValue, RedisError>] {
        try await perform(encoded, slow: slow).map(Self.result)
    }

    /// ``ping()`` without blocking the caller's thread.
    public func ping() async throws(RedisError) {
        let reply = try await send(.ping)
        guard reply.stringValue == "PONG" else { throw .protocolError(reason: "PING answered a \(reply.summary)") }
    }

    /// ``hgetall(_:)`` without blocking the caller's thread.
    package func hgetall(_ key: String) async throws(RedisError) -> [String: Data] {
        try await send(.hgetall(key)).hashFields()
    }

    /// ``hset(_:_:)`` without blocking the caller's thread.
    @discardableResult
    package func hset(_ key: String, _ fields: [String: Data]) async throws(RedisError) -> Int {
        guard !fields.isEmpty else { return 0 }
        return try integer(await send(.hset(key, fields)), "HSET")
    }

    /// ``hset(_:_:)`` with text values, without blocking the caller's thread.
    @discardableResult
    package func hset(_ key: String, _ fields: [String: String]) async throws(RedisError) -> Int {
        try await hset(key, fields.mapValues { Data($0.utf8) })
    }

    /// ``hsetnx(_:_:_:)`` without blocking the caller's thread.
    @discardableResult
    package func hsetnx(_ key: String, _ field: String, _ value: Data) async throws(RedisError) -> Bool {
        try integer(await send(.hsetnx(key, field, value)), "HSETNX") == 1
    }

    /// ``hsetnx(_:_:_:)`` with a text value, without blocking the caller's thread.
    @discardableResult
    package func hsetnx(_ key: String, _ field: String, _ value: String) async throws(RedisError) -> Bool {
        try await hsetnx(key, field, Data(value.utf8))
    }

    /// ``expire(_:ttl:)`` without blocking the caller's thread.
    @discardableResult
    package func expire(_ key: String, ttl: Duration) async throws(RedisError) -> Bool {
        try integer(await send(.expire(key, ttl: ttl)), "PEXPIRE") == 1
    }

    /// ``del(_:)`` without blocking the caller's thread.
    @discardableResult
    package func del(_ keys: [String]) async throws(RedisError) -> Int {
        guard !keys.isEmpty else { return 0 }
        return try integer(await send(.del(keys)), "DEL")
    }

    /// ``del(_:)`` of the given keys, without blocking the caller's thread.
    @discardableResult
    package func del(_ keys: String...) async throws(RedisError) -> Int {
        try await del(keys)
    }

    /// `EVAL`: runs a Lua script with `keys` (prefixed, as `KEYS`) and `args` (as `ARGV`), without
    /// blocking the caller's thread.
    @discardableResult
    package func eval(_ script: String, keys: [String] = [], args: [RedisArgument] = []) async throws(RedisError) -> RESPValue {
        try await send(.eval(script, keys: keys, args: args))
    }
}
