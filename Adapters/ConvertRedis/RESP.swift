import Foundation

/// One RESP2 value, as Redis replies.
package enum RESPValue: Sendable, Hashable {
    /// `+OK`.
    case simpleString(String)
    /// `-ERR …`: the server's error reply, a value like any other inside a pipeline.
    case error(String)
    /// `:42`.
    case integer(Int64)
    /// `$3 foo`; `nil` is the null bulk string (`$-1`), e.g. `GET` of a missing key.
    case bulkString(Data?)
    /// `*2 …`; `nil` is the null array (`*-1`).
    case array([RESPValue]?)

    /// The reply's type and size, never its content: for errors and logs, which must stay
    /// small whatever a peer sends.
    package var summary: String {
        switch self {
        case .simpleString(let text): "simple string of \(text.utf8.count) bytes"
        case .error(let text): "error reply of \(text.utf8.count) bytes"
        case .integer: "integer"
        case .bulkString(let data?): "bulk string of \(data.count) bytes"
        case .bulkString(nil): "null bulk string"
        case .array(let elements?): "array of \(elements.count) elements"
        case .array(nil): "null array"
        }
    }

    /// The text of a simple string, or a bulk string read as UTF-8 (invalid bytes replaced).
    package var stringValue: String? {
        switch self {
        case .simpleString(let text): text
        case .bulkString(let data?): String(decoding: data, as: UTF8.self)
        default: nil
        }
    }

    /// The bytes of a bulk string, or of a simple string.
    package var dataValue: Data? {
        switch self {
        case .bulkString(let data): data
        case .simpleString(let text): Data(text.utf8)
        default: nil
        }
    }

    /// The value of an integer reply.
    package var intValue: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    /// The elements of a non-null array.
    package var arrayValue: [RESPValue]? {
        if case .array(let elements?) = self { return elements }
        return nil
    }

    /// The message of an error reply.
    package var errorMessage: String? {
        if case .error(let message) = self { return message }
        return nil
    }

    /// Whether this is a null bulk string or a null array.
    package var isNull: Bool {
        switch self {
        case .bulkString(nil), .array(nil): true
        default: false
        }
    }

    /// An `HGETALL` reply as field names and values (empty for a missing key).
    ///
    /// - Throws: ``RedisError/protocolError(reason:)`` when the reply is not a flat array of
    ///   name and value strings.
    package func hashFields() throws(RedisError) -> [String: Data] {
        guard case .array(let elements) = self else { throw .protocolError(reason: "HGETALL answered \(self)") }
        let flat = elements ?? []
        guard flat.count.isMultiple(of: 2) else {
            throw .protocolError(reason: "HGETALL answered an odd number (\(flat.count)) of elements")
        }
        var fields: [String: Data] = [:]
        fields.reserveCapacity(flat.count / 2)
        var index = 0
        while index < flat.count {
            guard let name = flat[index].dataValue, let value = flat[index + 1].dataValue else {
                throw .protocolError(reason: "HGETALL answered a field that is not a string")
            }
            fields[String(decoding: name, as: UTF8.self)] = value
            index += 2
        }
        return fields
    }
}

/// One argument of a command: text, bytes, a number, or a key (which gets the key prefix).
package enum RedisArgument: Sendable, Hashable, ExpressibleByStringInterpolation, ExpressibleByIntegerLiteral {
    /// Text, sent as its UTF-8 bytes.
    case string(String)
    /// Bytes, sent as they are.
    case data(Data)
    /// A number, sent as its decimal text.
    case integer(Int)
    /// A key: the client (or connection) puts its configured `keyPrefix` in front.
    case key(String)

    package init(stringLiteral value: String) { self = .string(value) }
    package init(integerLiteral value: Int) { self = .integer(value) }
}

/// A command: its name and arguments, sent as an array of bulk strings.
///
/// ```swift
/// let command: RedisCommand = ["HSET", .key("visitor:1"), "segments", .data(bytes)]
/// ```
package struct RedisCommand: Sendable, Hashable, ExpressibleByArrayLiteral {
    /// The command name first, then its arguments.
    package var arguments: [RedisArgument]

    /// A command of `arguments`, the name first.
    package init(_ arguments: [RedisArgument]) { self.arguments = arguments }
    package init(arrayLiteral elements: RedisArgument...) { arguments = elements }
    /// A command named `name` with `arguments`.
    package init(_ name: String, _ arguments: RedisArgument...) { self.arguments = [.string(name)] + arguments }

    /// The command name, upper-cased, for messages.
    var name: String {
        guard case .string(let name)? = arguments.first else { return "command" }
        return name.uppercased()
    }
}

/// Writes commands in RESP2: `*<n>\r\n` then `$<len>\r\n<bytes>\r\n` per argument.
package enum RESPEncoder {
    /// The wire bytes of `command`, with `keyPrefix` in front of its `.key` arguments.
    package static func encode(_ command: RedisCommand, keyPrefix: String = "") -> [UInt8] {
        var bytes: [UInt8] = []
        append(command, keyPrefix: keyPrefix, to: &bytes)
        return bytes
    }

    /// Appends the wire bytes of `command` to `bytes`.
    package static func append(_ command: RedisCommand, keyPrefix: String = "", to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "*"))
        appendDecimal(command.arguments.count, to: &bytes)
        for argument in command.arguments {
            switch argument {
            case .string(let text): appendBulk(text, to: &bytes)
            case .data(let data): data.withUnsafeBytes { appendBulk($0, to: &bytes) }
            case .integer(let number): appendBulk(number, to: &bytes)
            case .key(let key): appendBulk(key, prefix: keyPrefix, to: &bytes)
            }
        }
    }

    /// `$<length>\r\n<prefix><text>\r\n`.
    fileprivate static func appendBulk(_ text: String, prefix: String = "", to bytes: inout [UInt8]) {
        var text = text, prefix = prefix
        appendHeader(prefix.utf8.count + text.utf8.count, to: &bytes)
        prefix.withUTF8 { bytes.append(contentsOf: $0) }
        text.withUTF8 { bytes.append(contentsOf: $0) }
        bytes.append(13)
        bytes.append(10)
    }

    /// `$<length>\r\n<payload>\r\n`.
    fileprivate static func appendBulk(_ payload: UnsafeRawBufferPointer, to bytes: inout [UInt8]) {
        appendHeader(payload.count, to: &bytes)
        bytes.append(contentsOf: payload)
        bytes.append(13)
        bytes.append(10)
    }

    /// `$<length>\r\n<number in decimal>\r\n`.
    fileprivate static func appendBulk(_ number: Int, to bytes: inout [UInt8]) {
        var digits = (0 as UInt64, 0 as UInt64, 0 as UInt64)
        let count = withUnsafeMutableBytes(of: &digits) { buffer in decimal(number, into: buffer) }
        appendHeader(count, to: &bytes)
        withUnsafeBytes(of: &digits) { bytes.append(contentsOf: $0[(24 - count)...]) }
        bytes.append(13)
        bytes.append(10)
    }

    /// `$<count>\r\n`.
    fileprivate static func appendHeader(_ count: Int, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "$"))
        appendDecimal(count, to: &bytes)
    }

    /// `<value>\r\n`.
    fileprivate static func appendDecimal(_ value: Int, to bytes: inout [UInt8]) {
        var digits = (0 as UInt64, 0 as UInt64, 0 as UInt64)
        let count = withUnsafeMutableBytes(of: &digits) { buffer in decimal(value, into: buffer) }
        withUnsafeBytes(of: &digits) { bytes.append(contentsOf: $0[(24 - count)...]) }
        bytes.append(13)
        bytes.append(10)
    }

    /// Writes `value` in decimal at the end of `buffer` (24 bytes); returns how many bytes.
    private static func decimal(_ value: Int, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        var magnitude = value.magnitude
        var index = buffer.count
        repeat {
            index -= 1
            buffer[index] = UInt8(truncatingIfNeeded: magnitude % 10) + 48
            magnitude /= 10
        } while magnitude > 0
        if value < 0 {
            index -= 1
            buffer[index] = UInt8(ascii: "-")
        }
        return buffer.count - index
    }
}

/// Commands in wire form, and how many replies they take: what a connection sends.
package struct EncodedCommands: Sendable {
    /// The RESP bytes of the commands, key prefix applied.
    package var bytes: [UInt8]
    /// How many commands (so replies) they hold.
    package var count: Int

    /// `commands` encoded with `keyPrefix` in front of their keys.
    package init(_ commands: [RedisCommand], keyPrefix: String) {
        bytes = []
        for command in commands { RESPEncoder.append(command, keyPrefix: keyPrefix, to: &bytes) }
        count = commands.count
    }

    /// Commands a ``RESPWriter`` wrote.
    package init(bytes: [UInt8], count: Int) {
        self.bytes = bytes
        self.count = count
    }

    /// The commands with `prelude` (one command) before each: `ASKING` holds for the next
    /// command only, so a redirected unit of several commands needs it before every one.
    /// `nil` when the bytes are not arrays of bulk strings (this package writes no other).
    package func interleaving(_ prelude: EncodedCommands) -> EncodedCommands? {
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count + count * prelude.bytes.count)
        var position = 0
        for _ in 0..<count {
            guard let end = Self.commandEnd(in: bytes, from: position) else { return nil }
            result += prelude.bytes
            result += bytes[position..<end]
            position = end
        }
        guard position == bytes.count else { return nil }
        return EncodedCommands(bytes: result, count: count * (1 + prelude.count))
    }

    /// Where the command (`*N` then N bulk strings) starting at `start` ends.
    private static func commandEnd(in bytes: [UInt8], from start: Int) -> Int? {
        func number(after marker: UInt8, at index: Int) -> (value: Int, next: Int)? {
            guard index < bytes.count, bytes[index] == marker else { return nil }
            var value = 0, cursor = index + 1
            while cursor < bytes.count, bytes[cursor] != 0x0D {
                guard (0x30...0x39).contains(bytes[cursor]), value < 1 << 40 else { return nil }
                value = value * 10 + Int(bytes[cursor] - 0x30)
                cursor += 1
            }
            guard cursor + 1 < bytes.count, bytes[cursor + 1] == 0x0A else { return nil }
            return (value, cursor + 2)
        }
        guard let (elements, first) = number(after: UInt8(ascii: "*"), at: start) else { return nil }
        var cursor = first
        for _ in 0..<elements {
            guard let (length, data) = number(after: UInt8(ascii: "$"), at: cursor), data + length + 2 <= bytes.count else { return nil }
            cursor = data + length + 2
        }
        return cursor
    }
}

/// Writes commands straight into wire form, without a ``RedisCommand`` per command: for the
/// large batches of the writes behind.
///
/// ```swift
/// var writer = RESPWriter(keyPrefix: "convert:")
/// writer.command("HSET", arguments: 3)
/// writer.key("visitor:1-2:v")
/// writer.argument("l")
/// writer.argument(bytes: json)
/// let encoded = writer.encoded
/// ```
package struct RESPWriter {
    private var bytes: [UInt8] = []
    private var count = 0
    private let prefix: String

    /// A writer applying `keyPrefix` to keys, with room for `capacity` bytes.
    package init(keyPrefix: String, capacity: Int = 0) {
        prefix = keyPrefix
        bytes.reserveCapacity(capacity)
    }

    /// Starts a command named `name` with `arguments` arguments after the name.
    package mutating func command(_ name: String, arguments: Int) {
        bytes.append(UInt8(ascii: "*"))
        RESPEncoder.appendDecimal(arguments + 1, to: &bytes)
        argument(name)
        count += 1
    }

    /// A text argument.
    package mutating func argument(_ text: String) {
        RESPEncoder.appendBulk(text, to: &bytes)
    }

    /// A byte argument.
    package mutating func argument(bytes payload: [UInt8]) {
        payload.withUnsafeBytes { RESPEncoder.appendBulk($0, to: &bytes) }
    }

    /// A number argument.
    package mutating func argument(_ number: Int) {
        RESPEncoder.appendBulk(number, to: &bytes)
    }

    /// A key argument, the prefix in front.
    package mutating func key(_ key: String) {
        RESPEncoder.appendBulk(key, prefix: prefix, to: &bytes)
    }

    /// The commands written so far.
    package var encoded: EncodedCommands { EncodedCommands(bytes: bytes, count: count) }

    /// How many commands were written.
    package var commandCount: Int { count }

    /// How many bytes were written.
    package var byteCount: Int { bytes.count }
}
