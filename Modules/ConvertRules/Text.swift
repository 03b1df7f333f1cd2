import Foundation

/// Byte-level string helpers with JavaScript semantics (code units, not grapheme clusters).
enum Text {
    /// `lower(a) == loweredB`, without allocating when `a` is ASCII.
    static func lowercasedEquals(_ a: String, _ loweredB: String) -> Bool {
        var a = a
        let ascii: Bool? = a.withUTF8 { bytes in
            guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
            guard bytes.count == loweredB.utf8.count else { return false }
            return zip(bytes, loweredB.utf8).allSatisfy { x, y in
                (x >= 0x41 && x <= 0x5A ? x | 0x20 : x) == y
            }
        }
        return ascii ?? a.lowercased().utf8.elementsEqual(loweredB.utf8)
    }

    static func contains(_ haystack: String, _ needle: String) -> Bool {
        let h = Array(haystack.utf8), n = Array(needle.utf8)
        if n.isEmpty { return true }
        guard h.count >= n.count else { return false }
        for start in 0...(h.count - n.count) where h[start] == n[0] {
            if h[start..<(start + n.count)].elementsEqual(n) { return true }
        }
        return false
    }

    static func hasSuffix(_ text: String, _ suffix: String) -> Bool {
        text.utf8.reversed().starts(with: suffix.utf8.reversed())
    }

    /// -1, 0 or 1 for two numbers or two strings (strings by UTF-16 code units, as JS does);
    /// `nil` for any other pairing.
    static func order(_ a: PreparedValue.Comparable, _ b: PreparedValue.Comparable) -> Int? {
        switch (a, b) {
        case (.number(let x), .number(let y)):
            if x.isNaN || y.isNaN { return nil }
            return x < y ? -1 : (x == y ? 0 : 1)
        case (.text(let x), .text(let y)):
            if x.utf16.elementsEqual(y.utf16) { return 0 }
            return x.utf16.lexicographicallyPrecedes(y.utf16) ? -1 : 1
        default:
            return nil
        }
    }

    static func search(_ regex: NSRegularExpression, in text: String) -> Bool {
        regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }
}
