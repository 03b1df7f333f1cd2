import Foundation

/// The commands ``RedisClient``'s conveniences send, for use in a ``RedisClient/pipeline(_:)``.
extension RedisCommand {
    /// `PING`; answered `PONG`.
    package static var ping: RedisCommand { ["PING"] }

    /// `HGETALL key`: every field of the hash at `key` (prefixed), empty when it does not exist.
    package static func hgetall(_ key: String) -> RedisCommand { ["HGETALL", .key(key)] }

    /// `HSET key field value …`, fields in name order (so the same fields are the same bytes).
    package static func hset(_ key: String, _ fields: [String: Data]) -> RedisCommand {
        var arguments: [RedisArgument] = ["HSET", .key(key)]
        for (field, value) in fields.sorted(by: { $0.key < $1.key }) {
            arguments.append(.string(field))
            arguments.append(.data(value))
        }
        return RedisCommand(arguments)
    }

    /// `HSETNX key field value`: sets the field only if it is not set (first writer wins); answers
    /// 1 if it set it.
    package static func hsetnx(_ key: String, _ field: String, _ value: Data) -> RedisCommand {
        ["HSETNX", .key(key), .string(field), .data(value)]
    }

    /// `HGET key field`: the field's value, or nil.
    package static func hget(_ key: String, _ field: String) -> RedisCommand {
        ["HGET", .key(key), .string(field)]
    }

    /// `PEXPIRE`: a `Duration` carries milliseconds that `EXPIRE`'s whole seconds would drop.
    /// Rounded up to the next millisecond; zero or less deletes the key, as in Redis.
    package static func expire(_ key: String, ttl: Duration) -> RedisCommand {
        ["PEXPIRE", .key(key), .integer(Int(clamping: ttl.wholeMillisecondsRoundedUp))]
    }

    /// `DEL key …`: deletes the keys (each prefixed); answers how many existed.
    package static func del(_ keys: [String]) -> RedisCommand {
        RedisCommand(["DEL"] + keys.map { .key($0) })
    }

    /// `EVAL script numkeys key… arg…`; the keys get the prefix, the arguments are sent as given.
    package static func eval(_ script: String, keys: [String] = [], args: [RedisArgument] = []) -> RedisCommand {
        RedisCommand(["EVAL", .string(script), .integer(keys.count)] + keys.map { .key($0) } + args)
    }
}
