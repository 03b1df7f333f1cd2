extension JSONValue {
    /// The value as JavaScript's `String(value)` would print it.
    ///
    /// Numbers print the ECMAScript way (`30.0` → `"30"`, `1e-7` → `"1e-7"`), arrays join their
    /// elements with `","` (null elements print empty), objects print `"[object Object]"`.
    package var javaScriptString: String {
        switch self {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .number(let n): return JavaScriptNumber.string(n)
        case .string(let s): return s
        case .array(let elements):
            return elements.map { $0.isNull ? "" : $0.javaScriptString }.joined(separator: ",")
        case .object: return "[object Object]"
        }
    }

    /// JavaScript truthiness: `false`, `0`, `NaN`, `""` and `null` are falsy; everything else is truthy.
    package var isTruthy: Bool {
        switch self {
        case .null: return false
        case .bool(let b): return b
        case .number(let n): return !(n == 0 || n.isNaN)
        case .string(let s): return !s.isEmpty
        case .array, .object: return true
        }
    }
}

/// ECMAScript number formatting and the numeric-string rules the rule engine uses.
public enum JavaScriptNumber {
    /// Formats `value` as ECMAScript's `Number.prototype.toString()` does.
    public static func string(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value < 0 ? "-Infinity" : "Infinity" }
        if value == 0 { return "0" }
        if value == value.rounded(.towardZero), abs(value) < 9.0e18 {
            return String(Int64(value))
        }
        let sign = value < 0 ? "-" : ""
        let (digits, point) = shortestDigits(abs(value))
        return sign + layout(digits: digits, point: point)
    }

    /// Decimal digits (no leading or trailing zeros) and the position of the decimal point
    /// relative to the first digit, from Swift's shortest round-trip description.
    private static func shortestDigits(_ value: Double) -> ([UInt8], Int) {
        let text = Array(value.description.utf8)
        var mantissa = text[...]
        var exponent = 0
        if let e = text.firstIndex(where: { $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }) {
            mantissa = text[..<e]
            exponent = Int(String(decoding: text[(e + 1)...], as: UTF8.self)) ?? 0
        }
        var digits: [UInt8] = []
        var point = 0
        var seenPoint = false
        for byte in mantissa {
            if byte == UInt8(ascii: ".") {
                seenPoint = true
                continue
            }
            digits.append(byte)
            if !seenPoint { point += 1 }
        }
        point += exponent
        while let first = digits.first, first == UInt8(ascii: "0") {
            digits.removeFirst()
            point -= 1
        }
        while let last = digits.last, last == UInt8(ascii: "0") {
            digits.removeLast()
        }
        return (digits, point)
    }

    private static func layout(digits: [UInt8], point n: Int) -> String {
        let k = digits.count
        let text = String(decoding: digits, as: UTF8.self)
        let zero = Character("0")
        if k <= n && n <= 21 {
            return text + String(repeating: zero, count: n - k)
        }
        if 0 < n && n <= 21 {
            let head = String(decoding: digits[..<n], as: UTF8.self)
            let tail = String(decoding: digits[n...], as: UTF8.self)
            return head + "." + tail
        }
        if -6 < n && n <= 0 {
            return "0." + String(repeating: zero, count: -n) + text
        }
        let e = n - 1
        let first = String(decoding: digits[..<1], as: UTF8.self)
        let rest = k > 1 ? "." + String(decoding: digits[1...], as: UTF8.self) : ""
        return first + rest + "e" + (e < 0 ? "-" : "+") + String(abs(e))
    }

    /// Parses a numeric string as the rule engine does for `less`/`lessEqual`.
    ///
    /// Accepted: `^-?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)$`. When the part before the first
    /// comma is `"0"`, commas become decimal points (`"0,500"` → 0.5); otherwise commas are
    /// removed (`"1,000"` → 1000). Anything else gives `nil`.
    package static func parseNumeric(_ text: String) -> Double? {
        if let integer = smallInteger(text) { return integer }
        let bytes = Array(text.utf8)
        guard isNumericShape(bytes) else { return nil }
        var normalized = bytes
        if let comma = bytes.firstIndex(of: UInt8(ascii: ",")) {
            let head = bytes[..<comma]
            if head.elementsEqual("0".utf8) {
                normalized = bytes.map { $0 == UInt8(ascii: ",") ? UInt8(ascii: ".") : $0 }
                // "0,500,000" would now hold two points; JS parseFloat stops at the second.
                if let second = normalized.indices.dropFirst(comma + 1).first(where: {
                    normalized[$0] == UInt8(ascii: ".")
                }) {
                    normalized = Array(normalized[..<second])
                }
            } else {
                normalized = bytes.filter { $0 != UInt8(ascii: ",") }
            }
        }
        // JS keeps a string whose value overflows to Infinity a string.
        return Double(String(decoding: normalized, as: UTF8.self)).flatMap { $0.isFinite ? $0 : nil }
    }

    private static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    /// The common case without allocating: up to 15 digits with an optional `-` (exact in a Double).
    private static func smallInteger(_ text: String) -> Double? {
        text.withBorrowedUTF8(smallInteger)
    }

    private static func smallInteger(_ bytes: UnsafeBufferPointer<UInt8>) -> Double? {
        var i = 0
        let negative = bytes.first == UInt8(ascii: "-")
        if negative { i = 1 }
        let digits = bytes.count - i
        guard digits > 0, digits <= 15 else { return nil }
        var value: Int64 = 0
        while i < bytes.count {
            let b = bytes[i]
            guard isDigit(b) else { return nil }
            value = value * 10 + Int64(b - 0x30)
            i += 1
        }
        return negative ? -Double(value) : Double(value)
    }

    private static func isNumericShape(_ b: [UInt8]) -> Bool {
        var i = 0
        if i < b.count, b[i] == UInt8(ascii: "-") { i += 1 }
        guard i < b.count else { return false }
        if b[i] == UInt8(ascii: ".") {
            return fraction(b, from: i) == b.count
        }
        let start = i
        while i < b.count, isDigit(b[i]) { i += 1 }
        let leading = i - start
        guard leading > 0 else { return false }
        if i < b.count, b[i] == UInt8(ascii: ",") {
            guard leading <= 3 else { return false }
            while i < b.count, b[i] == UInt8(ascii: ",") {
                guard b.count - i > 3, isDigit(b[i + 1]), isDigit(b[i + 2]), isDigit(b[i + 3]) else {
                    return false
                }
                i += 4
            }
        }
        if i == b.count { return true }
        return b[i] == UInt8(ascii: ".") && fraction(b, from: i) == b.count
    }

    /// Index after `.\d+` starting at `i` (which holds the point), or -1 when there are no digits.
    private static func fraction(_ b: [UInt8], from i: Int) -> Int {
        var j = i + 1
        while j < b.count, isDigit(b[j]) { j += 1 }
        return j > i + 1 ? j : -1
    }
}

extension JavaScriptNumber {
    /// JavaScript's `parseInt(text)`: the leading integer after optional white space and sign
    /// (`"0x"` reads hexadecimal); `nil` where JS gives NaN.
    package static func parseInt(_ text: String) -> Double? {
        var bytes = Substring(JavaScriptText.trimmed(text)).utf8[...]
        var sign = 1.0
        if let first = bytes.first, first == UInt8(ascii: "-") || first == UInt8(ascii: "+") {
            if first == UInt8(ascii: "-") { sign = -1 }
            bytes = bytes.dropFirst()
        }
        var radix = 10.0
        if bytes.starts(with: "0x".utf8) || bytes.starts(with: "0X".utf8) {
            radix = 16
            bytes = bytes.dropFirst(2)
        }
        var value = 0.0, digits = 0
        for byte in bytes {
            let digit: Int
            switch byte {
            case 0x30...0x39: digit = Int(byte - 0x30)
            case 0x61...0x66 where radix == 16: digit = Int(byte - 0x61 + 10)
            case 0x41...0x46 where radix == 16: digit = Int(byte - 0x41 + 10)
            default: digit = -1
            }
            if digit < 0 { break }
            value = value * radix + Double(digit)
            digits += 1
        }
        return digits == 0 ? nil : sign * value
    }

    /// JavaScript's `parseFloat(text)`: the longest leading decimal literal (or `Infinity`);
    /// `nil` where JS gives NaN.
    package static func parseFloat(_ text: String) -> Double? {
        let bytes = Array(Substring(JavaScriptText.trimmed(text)).utf8)
        var i = 0
        if i < bytes.count, bytes[i] == UInt8(ascii: "-") || bytes[i] == UInt8(ascii: "+") { i += 1 }
        if bytes[i...].starts(with: "Infinity".utf8) {
            return bytes.first == UInt8(ascii: "-") ? -.infinity : .infinity
        }
        func digits() -> Int {
            let start = i
            while i < bytes.count, bytes[i] >= 0x30 && bytes[i] <= 0x39 { i += 1 }
            return i - start
        }
        var mantissa = digits()
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            i += 1
            mantissa += digits()
        }
        guard mantissa > 0 else { return nil }
        var end = i
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "-") || bytes[i] == UInt8(ascii: "+") { i += 1 }
            if digits() > 0 { end = i }
        }
        var literal = String(decoding: bytes[..<end], as: UTF8.self)
        if literal.hasSuffix(".") { literal.removeLast() }
        return Double(literal)
    }
}

extension JavaScriptNumber {
    /// JavaScript's `Number(value)` for a JSON value; `nil` (absent) reads as NaN.
    ///
    /// Numbers as they are; `true` 1, `false` and `null` 0; strings by ``number(parsing:)``;
    /// arrays through their string form (`[]` 0, `[12]` 12, `[1, 2]` and `[true]` NaN); objects NaN.
    package static func number(_ value: JSONValue?) -> Double {
        switch value {
        case nil: return .nan
        case .null?: return 0
        case .bool(let b)?: return b ? 1 : 0
        case .number(let n)?: return n
        case .string(let s)?: return number(parsing: s)
        case .array?: return number(parsing: value!.javaScriptString)
        case .object?: return .nan
        }
    }

    /// JavaScript's `Number(text)`: white space trimmed, `""` 0, decimal literals with an optional
    /// sign and exponent, `Infinity`, and unsigned `0x`/`0o`/`0b` integers; anything else NaN.
    package static func number(parsing text: String) -> Double {
        let bytes = Array(Substring(JavaScriptText.trimmed(text)).utf8)
        if bytes.isEmpty { return 0 }
        if bytes.count > 2, bytes[0] == UInt8(ascii: "0") {
            let radix: Double?
            switch bytes[1] | 0x20 {
            case UInt8(ascii: "x"): radix = 16
            case UInt8(ascii: "o"): radix = 8
            case UInt8(ascii: "b"): radix = 2
            default: radix = nil
            }
            if let radix {
                var value = 0.0
                for byte in bytes[2...] {
                    guard let digit = hexDigit(byte), Double(digit) < radix else { return .nan }
                    value = value * radix + Double(digit)
                }
                return value
            }
        }
        var i = 0
        var sign = 1.0
        if bytes[0] == UInt8(ascii: "+") || bytes[0] == UInt8(ascii: "-") {
            sign = bytes[0] == UInt8(ascii: "-") ? -1 : 1
            i = 1
        }
        if bytes[i...].elementsEqual("Infinity".utf8) { return sign * .infinity }
        var mantissa = 0
        while i < bytes.count, isDigit(bytes[i]) { i += 1; mantissa += 1 }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            i += 1
            while i < bytes.count, isDigit(bytes[i]) { i += 1; mantissa += 1 }
        }
        guard mantissa > 0 else { return .nan }
        if i < bytes.count, bytes[i] | 0x20 == UInt8(ascii: "e") {
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            var exponent = 0
            while i < bytes.count, isDigit(bytes[i]) { i += 1; exponent += 1 }
            guard exponent > 0 else { return .nan }
        }
        guard i == bytes.count else { return .nan }
        // Swift's parser wants a digit on both sides of the point ("5.", ".5" and "1.e2" are JS literals).
        var literal: [UInt8] = []
        literal.reserveCapacity(bytes.count + 2)
        for (k, byte) in bytes.enumerated() {
            let point = byte == UInt8(ascii: ".")
            if point && (k == 0 || !isDigit(bytes[k - 1])) { literal.append(UInt8(ascii: "0")) }
            literal.append(byte)
            if point && (k + 1 == bytes.count || !isDigit(bytes[k + 1])) { literal.append(UInt8(ascii: "0")) }
        }
        return Double(String(decoding: literal, as: UTF8.self)) ?? .nan
    }

    private static func hexDigit(_ byte: UInt8) -> Int? {
        switch byte {
        case 0x30...0x39: return Int(byte - 0x30)
        case 0x61...0x66: return Int(byte - 0x61 + 10)
        case 0x41...0x46: return Int(byte - 0x41 + 10)
        default: return nil
        }
    }
}

extension JSONValue {
    /// `overlay` merged into `base` the way Convert's JavaScript SDK merges visitor data: a key in
    /// both takes the overlay's value, except that two arrays are united (the overlay's elements
    /// first, repeated scalars once) and two objects are merged member by member.
    package static func deepMerging(_ base: [String: JSONValue], _ overlay: [String: JSONValue]) -> [String: JSONValue] {
        var merged = base
        for (key, new) in overlay {
            guard let old = merged[key] else {
                merged[key] = new
                continue
            }
            switch (old, new) {
            case (.array(let oldElements), .array(let newElements)):
                merged[key] = .array(uniting(newElements, oldElements))
            case (.object(let oldMembers), .object(let newMembers)):
                merged[key] = .object(deepMerging(oldMembers, newMembers))
            case (.object, .array), (.array, .object):
                // JS merges the two into a new object, an array's indexes becoming keys.
                merged[key] = .object(deepMerging(old.membersByIndex, new.membersByIndex))
            default:
                merged[key] = new
            }
        }
        return merged
    }

    /// An object's members, or an array's elements keyed by their index.
    private var membersByIndex: [String: JSONValue] {
        switch self {
        case .object(let members): return members
        case .array(let elements):
            var indexed: [String: JSONValue] = [:]
            for (i, element) in elements.enumerated() { indexed[String(i)] = element }
            return indexed
        default: return [:]
        }
    }

    /// `[...new Set([...first, ...second])]`: scalars compare by value, arrays and objects by
    /// identity (so they are never merged away).
    private static func uniting(_ first: [JSONValue], _ second: [JSONValue]) -> [JSONValue] {
        var out: [JSONValue] = []
        var seen = Set<JSONValue>()
        for element in first + second {
            switch element {
            case .array, .object: out.append(element)
            default: if seen.insert(element).inserted { out.append(element) }
            }
        }
        return out
    }
}
