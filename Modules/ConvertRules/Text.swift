import Foundation

/// Byte-level string helpers with JavaScript semantics (code units, not grapheme clusters).
enum Text {
    /// `lower(a) == loweredB`, without allocating when `a` is ASCII.
    static func lowercasedEquals(_ a: String, _ loweredB: String) -> Bool {
        var a = a, b = loweredB
        let ascii: Bool? = a.withUTF8 { x in
            b.withUTF8 { y in
                for byte in x where byte >= 0x80 { return nil }
                guard x.count == y.count else { return false }
                for i in 0..<x.count {
                    let byte = x[i]
                    if (byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte) != y[i] { return false }
                }
                return true
            }
        }
        return ascii ?? lowercased(a).utf8.elementsEqual(loweredB.utf8)
    }

    /// JavaScript's `toLowerCase()`: full Unicode lower-casing, and a capital sigma at the end of a
    /// word becomes the final form `ς` (Unicode's Final_Sigma condition), which Swift's
    /// `lowercased()` does not apply.
    static func lowercased(_ text: String) -> String {
        guard text.utf8.contains(0xCE) else { return text.lowercased() }
        let scalars = Array(text.unicodeScalars)
        guard scalars.contains(capitalSigma) else { return text.lowercased() }
        var out = String.UnicodeScalarView()
        for (i, scalar) in scalars.enumerated() {
            if scalar == capitalSigma {
                out.append(isFinalSigma(at: i, in: scalars) ? "\u{03C2}" : "\u{03C3}")
            } else {
                out.append(contentsOf: scalar.properties.lowercaseMapping.unicodeScalars)
            }
        }
        return String(out)
    }

    private static let capitalSigma: Unicode.Scalar = "\u{03A3}"

    /// Preceded by a cased letter (case-ignorable characters between) and not followed by one.
    private static func isFinalSigma(at index: Int, in scalars: [Unicode.Scalar]) -> Bool {
        var before = index - 1
        while before >= 0, scalars[before].properties.isCaseIgnorable { before -= 1 }
        guard before >= 0, scalars[before].properties.isCased else { return false }
        var after = index + 1
        while after < scalars.count, scalars[after].properties.isCaseIgnorable { after += 1 }
        return !(after < scalars.count && scalars[after].properties.isCased)
    }

    /// JavaScript white space (`\s`, and what `trim()` removes): ECMAScript WhiteSpace and
    /// LineTerminator. Unlike `Character.isWhitespace` it includes U+FEFF and excludes U+0085.
    static func isJavaScriptWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09...0x0D, 0x20, 0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
            return true
        default:
            return false
        }
    }

    /// Whether `text` is empty or only JavaScript white space.
    static func isBlank(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy(isJavaScriptWhitespace)
    }

    /// `text` without leading and trailing JavaScript white space (`String.prototype.trim`).
    static func trimmed(_ text: String) -> Substring.UnicodeScalarView {
        let scalars = Substring(text).unicodeScalars
        guard let first = scalars.firstIndex(where: { !isJavaScriptWhitespace($0) }),
              let last = scalars.lastIndex(where: { !isJavaScriptWhitespace($0) })
        else { return scalars[scalars.endIndex...] }
        return scalars[first...last]
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
