/// A strict RFC 8259 parser producing ``JSONValue``s, with a nesting limit and byte offsets in
/// its errors. Duplicate object keys keep the last value, as `JSON.parse` does.
public struct JSONParser {
    /// How deep arrays and objects may nest.
    public static let maximumDepth = 512

    /// Parses one JSON document.
    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSONValue {
        let result: Result<JSONValue, JSONParseError>? = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(JSONParseError) -> JSONValue in try parse(buffer: buffer) }
        }
        if let result { return try result.get() }
        let copy = Array(bytes)
        return try copy.withUnsafeBufferPointer { buffer throws(JSONParseError) in try parse(buffer: buffer) }
    }

    static func parse(buffer: UnsafeBufferPointer<UInt8>) throws(JSONParseError) -> JSONValue {
        let tape = try JSONTape(parsing: buffer)
        return tape.withRoot(bytes: buffer) { $0.json }
    }

    /// The document's values in document order (see ``JSONTape``).
    static func parseTape(buffer: UnsafeBufferPointer<UInt8>) throws(JSONParseError)
        -> (nodes: [JSONTape.Node], strings: [String]) {
        var parser = JSONParser(bytes: buffer)
        parser.skipWhitespace()
        guard parser.index < buffer.count else { throw .empty }
        try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.index == buffer.count else { throw parser.failure("unexpected data after the document") }
        return (parser.nodes, parser.strings)
    }

    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    private var nodes: [JSONTape.Node] = []
    private var strings: [String] = []

    private init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        // About one value per eight bytes in typical documents: most parses never regrow.
        nodes.reserveCapacity(bytes.count / 8 + 1)
    }

    private func failure(_ reason: String) -> JSONParseError {
        .invalidJSON(offset: index, reason: reason)
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    private mutating func append(_ kind: JSONTape.Node.Kind) {
        nodes.append(JSONTape.Node(kind: kind, first: 0, second: 0))
    }

    private mutating func parseValue(depth: Int) throws(JSONParseError) {
        guard depth < Self.maximumDepth else { throw .tooDeep(offset: index, limit: Self.maximumDepth) }
        guard index < bytes.count else { throw failure("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): try parseObject(depth: depth)
        case UInt8(ascii: "["): try parseArray(depth: depth)
        case UInt8(ascii: "\""): try parseString()
        case UInt8(ascii: "t"): try expect("true"); append(.true)
        case UInt8(ascii: "f"): try expect("false"); append(.false)
        case UInt8(ascii: "n"): try expect("null"); append(.null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): nodes.append(.number(try parseNumber()))
        default: throw failure("unexpected character")
        }
    }

    private mutating func expect(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - index >= count else { throw failure("truncated literal") }
        for i in 0..<count where bytes[index + i] != literal.utf8Start[i] {
            throw failure("invalid literal")
        }
        index += count
    }

    /// Appends a container's node, its count and end filled in by `close`.
    private mutating func open(_ kind: JSONTape.Node.Kind) -> Int {
        append(kind)
        return nodes.count - 1
    }

    private mutating func close(_ slot: Int, count: Int) {
        nodes[slot].first = count
        nodes[slot].second = nodes.count
    }

    private mutating func parseObject(depth: Int) throws(JSONParseError) {
        index += 1
        let slot = open(.object)
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            close(slot, count: 0)
            return
        }
        var count = 0
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw failure("expected a member name") }
            try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw failure("expected ':'") }
            index += 1
            skipWhitespace()
            try parseValue(depth: depth + 1)
            count += 1
            skipWhitespace()
            guard index < bytes.count else { throw failure("unterminated object") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "}") {
                index += 1
                close(slot, count: count)
                return
            }
            throw failure("expected ',' or '}'")
        }
    }

    private mutating func parseArray(depth: Int) throws(JSONParseError) {
        index += 1
        let slot = open(.array)
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            close(slot, count: 0)
            return
        }
        var count = 0
        while true {
            skipWhitespace()
            try parseValue(depth: depth + 1)
            count += 1
            skipWhitespace()
            guard index < bytes.count else { throw failure("unterminated array") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "]") {
                index += 1
                close(slot, count: count)
                return
            }
            throw failure("expected ',' or ']'")
        }
    }

    private mutating func parseNumber() throws(JSONParseError) -> Double {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        let intStart = index
        while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        let intDigits = index - intStart
        guard intDigits > 0 else { throw failure("invalid number") }
        if intDigits > 1, bytes[intStart] == UInt8(ascii: "0") { throw failure("leading zero in number") }
        var simple = intDigits <= 15
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            simple = false
            index += 1
            let fracStart = index
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            guard index > fracStart else { throw failure("invalid fraction") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            simple = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            let expStart = index
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            guard index > expStart else { throw failure("invalid exponent") }
        }
        if simple {
            var value: Int64 = 0
            for i in intStart..<index { value = value * 10 + Int64(bytes[i] - 0x30) }
            return bytes[start] == UInt8(ascii: "-") ? (value == 0 ? -0.0 : -Double(value)) : Double(value)
        }
        let text = String(decoding: span(start, index), as: UTF8.self)
        guard let value = Double(text) else { throw .invalidJSON(offset: start, reason: "unreadable number") }
        return value
    }

    private func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    /// The bytes `[start, end)` without building a generic slice.
    private func span(_ start: Int, _ end: Int) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: bytes.baseAddress.map { $0 + start }, count: end - start)
    }

    /// Appends a string: a span of the source when it is plain ASCII, else its decoded text.
    private mutating func parseString() throws(JSONParseError) {
        index += 1
        let start = index
        skipPlainText()
        var ascii = true
        while index < bytes.count {
            let b = bytes[index]
            if b == UInt8(ascii: "\"") {
                let raw = span(start, index)
                index += 1
                if ascii {
                    nodes.append(JSONTape.Node(kind: .span, first: start, second: index - 1))
                    return
                }
                guard let text = String(validating: raw, as: UTF8.self) else {
                    throw .invalidJSON(offset: start, reason: "invalid UTF-8 in string")
                }
                appendDecoded(text)
                return
            }
            if b >= 0x80 { ascii = false }
            if b == UInt8(ascii: "\\") {
                appendDecoded(try parseEscapedString(from: start))
                return
            }
            if b < 0x20 { throw failure("control character in string") }
            index += 1
        }
        throw failure("unterminated string")
    }

    /// Moves past string bytes eight at a time while none of them is a quote, a backslash, a
    /// control character or non-ASCII; the byte loop reads the rest.
    private mutating func skipPlainText() {
        guard let base = bytes.baseAddress else { return }
        let ones: UInt64 = 0x0101_0101_0101_0101
        let high: UInt64 = 0x8080_8080_8080_8080
        while bytes.count - index >= 8 {
            let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
            // A byte is zero, or below 0x20, exactly when these set its high bit (for ASCII words;
            // a word with a non-ASCII byte stops the loop through its own high bit).
            let quote = word ^ (ones &* 0x22)
            let backslash = word ^ (ones &* 0x5C)
            let special = ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)
                | ((word &- ones &* 0x20) & ~word) | word
            if special & high != 0 { return }
            index += 8
        }
    }

    private mutating func appendDecoded(_ text: String) {
        nodes.append(JSONTape.Node(kind: .decoded, first: strings.count, second: 0))
        strings.append(text)
    }

    private mutating func parseEscapedString(from start: Int) throws(JSONParseError) -> String {
        var out: [UInt8] = Array(span(start, index))
        while index < bytes.count {
            let b = bytes[index]
            if b == UInt8(ascii: "\"") {
                index += 1
                guard let text = String(validating: out, as: UTF8.self) else {
                    throw .invalidJSON(offset: start, reason: "invalid UTF-8 in string")
                }
                return text
            }
            if b < 0x20 { throw failure("control character in string") }
            if b != UInt8(ascii: "\\") {
                out.append(b)
                index += 1
                continue
            }
            index += 1
            guard index < bytes.count else { break }
            let e = bytes[index]
            index += 1
            switch e {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"): out.append(contentsOf: try parseUnicodeEscape())
            default: throw failure("invalid escape")
            }
        }
        throw failure("unterminated string")
    }

    private mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard bytes.count - index >= 4 else { throw failure("truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[index]
            let digit: UInt32
            switch c {
            case 0x30...0x39: digit = UInt32(c - 0x30)
            case 0x41...0x46: digit = UInt32(c - 0x41 + 10)
            case 0x61...0x66: digit = UInt32(c - 0x61 + 10)
            default: throw failure("invalid \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    /// Decodes `XXXX` (after `\u`), pairing surrogates; a lone surrogate becomes U+FFFD as in
    /// most JSON readers, since Swift strings cannot hold one.
    private mutating func parseUnicodeEscape() throws(JSONParseError) -> [UInt8] {
        var scalar = try hex4()
        if (0xD800...0xDBFF).contains(scalar), bytes.count - index >= 6,
           bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") {
            let save = index
            index += 2
            let low = try hex4()
            if (0xDC00...0xDFFF).contains(low) {
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else {
                index = save
            }
        }
        let unicode = Unicode.Scalar(scalar) ?? "\u{FFFD}"
        return Array(String(Character(unicode)).utf8)
    }
}

/// Why bytes are not a JSON document.
public enum JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The input is empty or only white space.
    case empty
    /// The bytes are not valid JSON; `offset` is the byte where parsing stopped.
    case invalidJSON(offset: Int, reason: String)
    /// The JSON nests deeper than ``JSONParser/maximumDepth``.
    case tooDeep(offset: Int, limit: Int)

    public var description: String {
        switch self {
        case .empty: return "the input is empty"
        case .invalidJSON(let offset, let reason): return "not valid JSON: \(reason) at byte \(offset)"
        case .tooDeep(let offset, let limit): return "JSON nests deeper than \(limit) levels at byte \(offset)"
        }
    }
}

extension JSONParser {
    /// The 1-based line and column of byte `offset` in `bytes`, for messages a person reads;
    /// columns count characters (UTF-8 sequences), lines end at `\n`.
    package static func lineAndColumn(ofByte offset: Int, in bytes: [UInt8]) -> (line: Int, column: Int) {
        lineAndColumn(ofBytes: [offset], in: bytes)[offset] ?? (1, 1)
    }

    /// ``lineAndColumn(ofByte:in:)`` for many offsets in one pass over `bytes`; offsets outside
    /// `0...bytes.count` are left out (the end offset is the position after the last character).
    package static func lineAndColumn(ofBytes offsets: some Sequence<Int>, in bytes: [UInt8]) -> [Int: (line: Int, column: Int)] {
        var result: [Int: (line: Int, column: Int)] = [:]
        var line = 1, column = 1, index = 0
        for target in Set(offsets).sorted() where target >= 0 && target <= bytes.count {
            while index < target {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\n") {
                    line += 1
                    column = 1
                } else if byte & 0b1100_0000 != 0b1000_0000 {
                    // Continuation bytes belong to the character their lead byte started.
                    column += 1
                }
                index += 1
            }
            result[target] = (line, column)
        }
        return result
    }
}
