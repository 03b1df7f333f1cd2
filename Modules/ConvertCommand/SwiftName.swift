import ConvertSwiftSDK
import Foundation

/// Turns config keys into Swift names, and text into Swift literals and comments.
enum SwiftName {
    /// Keywords and names the generated file needs unshadowed; a key that becomes one gets `_`.
    static let reserved: Set<String> = [
        "associatedtype", "class", "deinit", "enum", "extension", "fileprivate", "func", "import", "init", "inout",
        "internal", "let", "open", "operator", "private", "precedencegroup", "protocol", "public", "rethrows", "static",
        "struct", "subscript", "typealias", "var", "break", "case", "catch", "continue", "default", "defer", "do",
        "else", "fallthrough", "for", "guard", "if", "in", "repeat", "return", "throw", "switch", "where", "while",
        "as", "false", "is", "nil", "self", "super", "throws", "true", "try", "await", "async", "actor", "any", "some",
        "package", "consume", "copy", "discard", "each", "borrowing", "consuming", "macro", "nonisolated", "isolated",
        "Any", "Self", "Type", "Protocol", "AnyObject", "Swift", "Foundation",
    ]

    /// Words of `key`: runs of ASCII letters and digits.
    static func words(_ key: String) -> [String] {
        key.unicodeScalars.split { !($0.isASCII && (CharacterSet.alphanumerics.contains($0))) }
            .map { String(String.UnicodeScalarView($0)) }
    }

    /// `key` in lowerCamelCase: "button-height" → `buttonHeight`, "URL-path" → `urlPath`.
    static func member(_ key: String) -> String {
        let parts = words(key)
        guard let first = parts.first else { return "unnamed" }
        return finish(lowerLeading(first) + parts.dropFirst().map(upperFirst).joined())
    }

    /// `key` in UpperCamelCase: "test-experience-1" → `TestExperience1`.
    static func type(_ key: String) -> String {
        let parts = words(key)
        guard !parts.isEmpty else { return "Unnamed" }
        return finish(parts.map(upperFirst).joined())
    }

    /// Whether `name` can name the enclosing type as given.
    static func isPlainTypeName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first.isASCII, CharacterSet.letters.contains(first) else { return false }
        return name.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "_") }
            && !reserved.contains(name)
    }

    private static func finish(_ name: String) -> String {
        if let first = name.unicodeScalars.first, CharacterSet.decimalDigits.contains(first) { return "_" + name }
        return reserved.contains(name) ? name + "_" : name
    }

    private static func upperFirst(_ word: String) -> String { word.prefix(1).uppercased() + word.dropFirst() }

    /// Lower-cases a leading run of capitals, keeping the last one of a run followed by a small
    /// letter as the next word's start ("URLPath" → "urlPath", "ABTest" → "abTest").
    private static func lowerLeading(_ word: String) -> String {
        let characters = Array(word)
        var end = 0
        while end < characters.count, characters[end].isUppercase { end += 1 }
        if end > 1, end < characters.count, characters[end].isLowercase { end -= 1 }
        if end == 0 { return word }
        return String(characters[..<end]).lowercased() + String(characters[end...])
    }

    /// `text` as a Swift string literal.
    static func literal(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7f || scalar.properties.generalCategory == .format {
                    out += "\\u{\(String(scalar.value, radix: 16))}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    /// `text` made safe for a one-line comment: control and format characters become spaces.
    static func comment(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { scalar in
            scalar.value < 0x20 || scalar.value == 0x7f || scalar.properties.generalCategory == .format
                || scalar.properties.generalCategory == .lineSeparator || scalar.properties.generalCategory == .paragraphSeparator
                ? " " : scalar
        }))
    }
}
