import Foundation

/// An incremental RESP2 reply parser: feed it bytes as they arrive, take values as they complete.
///
/// It holds partial input across reads, returns pipelined replies one by one, and rejects bytes
/// that are not RESP2 with ``RedisError/protocolError(reason:)``; once it has failed it keeps
/// failing. Lengths are checked against ``Limits`` before anything is buffered for them, so a
/// hostile or broken peer costs bounded memory and stack.
///
/// ```swift
/// var parser = RESPParser()
/// parser.append(received)
/// while let reply = try parser.next() { handle(reply) }
/// ```
package struct RESPParser: Sendable {
    /// Bounds on what one reply may claim.
    ///
    /// The defaults are sized for visitor data (a hash of a few dozen small fields per visitor),
    /// not for Redis's own maxima: each parsed value costs some 40 bytes beside its wire bytes,
    /// so a reply of millions of one-byte elements would otherwise cost hundreds of megabytes.
    package struct Limits: Sendable, Hashable {
        /// The longest bulk string.
        package var maxBulkLength: Int
        /// The most elements one array may announce.
        package var maxArrayLength: Int
        /// The most values (nested ones included) one top-level reply may hold.
        package var maxElements: Int
        /// The deepest nesting of arrays.
        package var maxDepth: Int
        /// The longest simple string, error or length line.
        package var maxLineLength: Int
        /// The most wire bytes one top-level reply may span.
        package var maxReplyBytes: Int

        /// Limits sized for visitor data by default (see above).
        package init(maxBulkLength: Int = 4 << 20, maxArrayLength: Int = 65_536, maxDepth: Int = 16,
                    maxLineLength: Int = 64 * 1024, maxReplyBytes: Int = 32 << 20, maxElements: Int = 262_144) {
            self.maxBulkLength = maxBulkLength
            self.maxArrayLength = maxArrayLength
            self.maxElements = maxElements
            self.maxDepth = maxDepth
            self.maxLineLength = maxLineLength
            self.maxReplyBytes = maxReplyBytes
        }
    }

    /// An array being filled: its elements complete one by one, possibly across reads.
    private struct Frame: Sendable {
        let expected: Int
        var elements: [RESPValue]
    }

    private enum Element {
        case value(RESPValue)
        case arrayHeader(Int)
    }

    /// The bounds a reply must stay within; past one the parser fails.
    package let limits: Limits
    private var buffer: [UInt8] = []
    /// Where the next unparsed element starts in `buffer`.
    private var start = 0
    private var stack: [Frame] = []
    /// Wire bytes taken so far by the top-level reply in progress.
    private var replyBytes = 0
    /// Values (array headers included) read so far for the top-level reply in progress.
    private var replyElements = 0
    private var failure: RedisError?

    /// A parser with `limits` (sized for visitor data by default).
    package init(limits: Limits = Limits()) { self.limits = limits }

    /// Bytes received and not yet returned as part of a value.
    package var bufferedByteCount: Int { buffer.count - start }

    /// Whether a reply is partly parsed or bytes wait to be parsed.
    package var hasPendingInput: Bool { bufferedByteCount > 0 || !stack.isEmpty }

    /// Adds received bytes.
    package mutating func append(_ bytes: some Sequence<UInt8>) { buffer.append(contentsOf: bytes) }

    /// Adds received bytes from raw memory.
    package mutating func append(_ bytes: UnsafeRawBufferPointer) { buffer.append(contentsOf: bytes) }

    /// The next complete reply, or `nil` until more bytes arrive.
    package mutating func next() throws(RedisError) -> RESPValue? {
        if let failure { throw failure }
        do {
            return try parseNext()
        } catch {
            failure = error
            buffer = []
            start = 0
            stack = []
            throw error
        }
    }

    private mutating func parseNext() throws(RedisError) -> RESPValue? {
        while true {
            guard let element = try readElement() else {
                compact()
                return nil
            }
            replyElements += 1
            guard replyElements <= limits.maxElements else {
                throw .protocolError(reason: "reply holds more than \(limits.maxElements) values")
            }
            var completed: RESPValue
            switch element {
            case .arrayHeader(let count):
                guard stack.count < limits.maxDepth else {
                    throw .protocolError(reason: "arrays nested deeper than \(limits.maxDepth)")
                }
                // Reserve only a little: the count is the peer's claim, the bytes are not here yet.
                var elements: [RESPValue] = []
                elements.reserveCapacity(min(count, 1024))
                stack.append(Frame(expected: count, elements: elements))
                continue
            case .value(let value):
                completed = value
            }
            var filledParent = false
            while !stack.isEmpty {
                stack[stack.count - 1].elements.append(completed)
                guard stack[stack.count - 1].elements.count == stack[stack.count - 1].expected else {
                    filledParent = true
                    break
                }
                completed = .array(stack.removeLast().elements)
            }
            if filledParent { continue }
            replyBytes = 0
            replyElements = 0
            compact()
            return completed
        }
    }

    /// Reads one element at `start` and consumes it, or returns `nil` (consuming nothing) when
    /// its bytes are not all here yet.
    private mutating func readElement() throws(RedisError) -> Element? {
        guard start < buffer.count else { return nil }
        let type = buffer[start]
        switch type {
        case UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: ":"), UInt8(ascii: "$"), UInt8(ascii: "*"):
            break
        default:
            throw .protocolError(reason: "unexpected byte \(hex(type)) where a reply starts")
        }
        guard let (line, afterLine) = try readLine(from: start + 1) else { return nil }
        switch type {
        case UInt8(ascii: "+"):
            try consume(upTo: afterLine)
            return .value(.simpleString(String(decoding: buffer[line], as: UTF8.self)))
        case UInt8(ascii: "-"):
            try consume(upTo: afterLine)
            return .value(.error(String(decoding: buffer[line], as: UTF8.self)))
        case UInt8(ascii: ":"):
            let value = try parseInteger(line, what: "integer")
            try consume(upTo: afterLine)
            return .value(.integer(value))
        case UInt8(ascii: "$"):
            guard let size = try length(line, what: "bulk length", limit: limits.maxBulkLength, unit: " bytes") else {
                try consume(upTo: afterLine)
                return .value(.bulkString(nil))
            }
            guard replyBytes + (afterLine - start) + size + 2 <= limits.maxReplyBytes else {
                throw .protocolError(reason: "reply exceeds the limit of \(limits.maxReplyBytes) bytes")
            }
            let end = afterLine + size
            guard end + 2 <= buffer.count else { return nil }
            guard buffer[end] == 13, buffer[end + 1] == 10 else {
                throw .protocolError(reason: "bulk string of \(size) bytes not followed by CRLF")
            }
            let payload = Data(buffer[afterLine..<end])
            try consume(upTo: end + 2)
            return .value(.bulkString(payload))
        default:
            guard let count = try length(line, what: "array length", limit: limits.maxArrayLength, unit: "") else {
                try consume(upTo: afterLine)
                return .value(.array(nil))
            }
            try consume(upTo: afterLine)
            return count == 0 ? .value(.array([])) : .arrayHeader(count)
        }
    }

    /// The line starting at `from` (without CRLF) and the index after its CRLF.
    private func readLine(from: Int) throws(RedisError) -> (Range<Int>, Int)? {
        var index = from
        let limit = min(buffer.count, from + limits.maxLineLength + 1)
        while index < limit {
            if buffer[index] == 13 {
                guard index + 1 < buffer.count else { return nil }
                guard buffer[index + 1] == 10 else {
                    throw .protocolError(reason: "CR not followed by LF in a reply line")
                }
                return (from..<index, index + 2)
            }
            if buffer[index] == 10 { throw .protocolError(reason: "LF without CR in a reply line") }
            index += 1
        }
        if index - from > limits.maxLineLength {
            throw .protocolError(reason: "reply line longer than \(limits.maxLineLength) bytes")
        }
        return nil
    }

    /// A bulk or array length: `nil` for -1 (a null), otherwise within `0...limit`.
    private func length(_ line: Range<Int>, what: String, limit: Int, unit: String) throws(RedisError) -> Int? {
        let length = try parseInteger(line, what: what)
        if length == -1 { return nil }
        guard length >= 0 else { throw .protocolError(reason: "negative \(what) \(length)") }
        guard length <= limit else { throw .protocolError(reason: "\(what) \(length) exceeds the limit of \(limit)\(unit)") }
        return Int(length)
    }

    private func parseInteger(_ line: Range<Int>, what: String) throws(RedisError) -> Int64 {
        var index = line.lowerBound
        let negative = index < line.upperBound && buffer[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        guard index < line.upperBound else { throw .protocolError(reason: "empty \(what)") }
        var value: Int64 = 0
        while index < line.upperBound {
            let byte = buffer[index]
            guard byte >= 48, byte <= 57 else {
                throw .protocolError(reason: "\(what) contains \(hex(byte)), not a digit")
            }
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
            // Accumulate negatively so Int64.min parses too.
            let (next, overflow2) = shifted.subtractingReportingOverflow(Int64(byte - 48))
            guard !overflow1, !overflow2 else { throw .protocolError(reason: "\(what) overflows 64 bits") }
            value = next
            index += 1
        }
        if negative { return value }
        guard value != .min else { throw .protocolError(reason: "\(what) overflows 64 bits") }
        return -value
    }

    private mutating func consume(upTo end: Int) throws(RedisError) {
        replyBytes += end - start
        start = end
        guard replyBytes <= limits.maxReplyBytes else {
            throw .protocolError(reason: "reply exceeds the limit of \(limits.maxReplyBytes) bytes")
        }
    }

    /// Drops consumed bytes once they are the bulk of the buffer, so a long-lived connection's
    /// buffer stays the size of what is in flight.
    private mutating func compact() {
        if start == buffer.count {
            if buffer.capacity > 1 << 20 { buffer = [] } else { buffer.removeAll(keepingCapacity: true) }
            start = 0
        } else if start > 64 * 1024, start > buffer.count / 2 {
            buffer.removeSubrange(0..<start)
            start = 0
        }
    }

    private func hex(_ byte: UInt8) -> String {
        "0x" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
