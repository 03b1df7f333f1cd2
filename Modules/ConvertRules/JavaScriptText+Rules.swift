import ConvertJSON
import Foundation

extension JavaScriptText {
    /// `lower(a) == loweredB`, without allocating when `a` is ASCII.
    static func lowercasedEquals(_ a: String, _ loweredB: String) -> Bool {
        loweredB.withBorrowedUTF8 { lowercasedEquals(a, loweredBytes: $0) }
    }

    /// ``lowercasedEquals(_:_:)`` with the lowered text as its UTF-8 bytes.
    static func lowercasedEquals(_ a: String, loweredBytes y: UnsafeBufferPointer<UInt8>) -> Bool {
        if let ascii = a.withBorrowedUTF8({ asciiLowercasedEquals($0, y) }) { return ascii }
        return JavaScriptText.lowercased(a).utf8.elementsEqual(y)
    }

    /// Whether ASCII `x` lowered equals `y`; `nil` when `x` is not ASCII.
    @inline(__always)
    private static func asciiLowercasedEquals(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Bool? {
        for byte in x where byte >= 0x80 { return nil }
        guard x.count == y.count else { return false }
        for i in 0..<x.count {
            let byte = x[i]
            if (byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte) != y[i] { return false }
        }
        return true
    }

    /// Whether `needle`'s UTF-8 bytes occur in `haystack`'s (JS `includes` on already lowered text).
    static func contains(_ haystack: String, _ needle: String) -> Bool {
        let h = Array(haystack.utf8), n = Array(needle.utf8)
        if n.isEmpty { return true }
        guard h.count >= n.count else { return false }
        for start in 0...(h.count - n.count) where h[start] == n[0] {
            if h[start..<(start + n.count)].elementsEqual(n) { return true }
        }
        return false
    }

    /// Whether `text`'s UTF-8 bytes end with `suffix`'s.
    static func hasSuffix(_ text: String, _ suffix: String) -> Bool {
        text.utf8.reversed().starts(with: suffix.utf8.reversed())
    }
}

extension PreparedValue.Comparable {
    /// -1, 0 or 1 for two numbers, two strings (by UTF-16 code units, as JS does) or two booleans;
    /// `nil` for any other pairing.
    static func order(_ a: PreparedValue.Comparable, _ b: PreparedValue.Comparable) -> Int? {
        switch (a, b) {
        case (.number(let x), .number(let y)):
            if x.isNaN || y.isNaN { return nil }
            return x < y ? -1 : (x == y ? 0 : 1)
        case (.boolean(let x), .boolean(let y)):
            return x == y ? 0 : (!x ? -1 : 1)
        case (.text(let x), .text(let y)):
            if x.utf16.elementsEqual(y.utf16) { return 0 }
            return x.utf16.lexicographicallyPrecedes(y.utf16) ? -1 : 1
        default:
            return nil
        }
    }
}
