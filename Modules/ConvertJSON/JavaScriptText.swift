/// JavaScript's string semantics where they differ from Swift's: lower-casing with the final-sigma
/// rule, and what counts as white space.
package enum JavaScriptText {
    /// JavaScript's `toLowerCase()`: full Unicode lower-casing, and a capital sigma at the end of a
    /// word becomes the final form `ς` (Unicode's Final_Sigma condition), which Swift's
    /// `lowercased()` does not apply.
    package static func lowercased(_ text: String) -> String {
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
    package static func isJavaScriptWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09...0x0D, 0x20, 0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
            return true
        default:
            return false
        }
    }

    /// Whether `text` is empty or only JavaScript white space.
    package static func isBlank(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy(isJavaScriptWhitespace)
    }

    /// `text` without leading and trailing JavaScript white space (`String.prototype.trim`).
    package static func trimmed(_ text: String) -> Substring.UnicodeScalarView {
        let scalars = Substring(text).unicodeScalars
        guard let first = scalars.firstIndex(where: { !isJavaScriptWhitespace($0) }),
              let last = scalars.lastIndex(where: { !isJavaScriptWhitespace($0) })
        else { return scalars[scalars.endIndex...] }
        return scalars[first...last]
    }
}

extension String {
    /// `body` of the string's UTF-8 bytes, borrowed in place where the storage allows:
    /// `withUTF8` needs a mutable copy, which retains the storage.
    @inlinable
    package func withBorrowedUTF8<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        if let result = try utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = self
        return try copy.withUTF8(body)
    }
}
