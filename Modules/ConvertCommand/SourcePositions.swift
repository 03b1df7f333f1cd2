import ConvertSwiftSDK

/// A line and column in a text file, both counted from 1; the column counts characters
/// (one per UTF-8 sequence, a tab is one), as editors show them.
struct SourcePosition: Hashable, CustomStringConvertible {
    let line: Int
    let column: Int

    var description: String { "\(line):\(column)" }
}

/// Where values of a well-formed JSON document start, found by walking its bytes.
///
/// Paths are spelled as the config decoder spells them in ``ConfigDegradation/path``: member
/// names joined by `.`, array indexes as `[n]` (`experiences[3].variations[0].traffic_allocation`),
/// the document itself as `""`. A repeated member name resolves to its last occurrence, the
/// one the parser keeps.
struct JSONSourceMap {
    private let bytes: [UInt8]

    /// `offsets(of:from:)` needs a document ``JSONParser`` accepts (the walk does not check
    /// syntax again); `positions(of:)` takes any bytes, a syntax error's offset included.
    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The byte offset where each of `paths` starts, for those the document has. Paths are
    /// taken from the value starting at byte `start` (the whole document by default), so a
    /// wrapped document's inner paths can be looked up from where its `data` starts.
    func offsets(of paths: Set<String>, from start: Int? = nil) -> [String: Int] {
        guard !paths.isEmpty else { return [:] }
        var walk = Walk(bytes: bytes, wanted: paths, start: start ?? documentStart)
        walk.value(path: "")
        return walk.found
    }

    /// The position of each byte offset (an offset at the end of the input is the position just
    /// after the last character). One pass over the bytes however many offsets are asked.
    func positions(of offsets: some Sequence<Int>) -> [Int: SourcePosition] {
        JSONParser.lineAndColumn(ofBytes: offsets, in: bytes).mapValues { SourcePosition(line: $0.line, column: $0.column) }
    }

    /// The offset of the first byte of the document's top-level value.
    var documentStart: Int {
        var index = 0
        while index < bytes.count, Self.isWhitespace(bytes[index]) { index += 1 }
        return index
    }

    fileprivate static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }
}

/// One recursive descent (as deep as the document, which the parser bounds) that records the
/// start of every wanted path, building paths only where a wanted one can still lie below.
private struct Walk {
    let bytes: [UInt8]
    let wanted: Set<String>
    private(set) var found: [String: Int] = [:]
    private var index: Int
    /// Every wanted path cut before each `.` and `[`, to skip subtrees that hold none.
    private let prefixes: Set<String>

    init(bytes: [UInt8], wanted: Set<String>, start: Int) {
        self.bytes = bytes
        self.wanted = wanted
        index = start
        var prefixes: Set<String> = [""]
        for path in wanted {
            var current = ""
            for character in path {
                if character == "." || character == "[" { prefixes.insert(current) }
                current.append(character)
            }
            prefixes.insert(current)
        }
        self.prefixes = prefixes
    }

    /// Walks the value at `index`, whose path is `path`; leaves `index` after it.
    mutating func value(path: String) {
        skipWhitespace()
        guard index < bytes.count else { return }
        if wanted.contains(path) { found[path] = index }
        let descend = prefixes.contains(path)
        switch bytes[index] {
        case UInt8(ascii: "{"):
            guard descend else { return skipContainer() }
            index += 1
            while true {
                skipWhitespace()
                guard index < bytes.count else { return }
                if bytes[index] == UInt8(ascii: "}") { index += 1; return }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                let name = key()
                skipWhitespace()
                index += 1  // the ':'
                value(path: path.isEmpty ? name : path + "." + name)
            }
        case UInt8(ascii: "["):
            guard descend else { return skipContainer() }
            index += 1
            var element = 0
            while true {
                skipWhitespace()
                guard index < bytes.count else { return }
                if bytes[index] == UInt8(ascii: "]") { index += 1; return }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                value(path: path + "[\(element)]")
                element += 1
            }
        case UInt8(ascii: "\""):
            skipString()
        default:
            // A number or a literal: runs until a delimiter.
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: ",") || byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]")
                    || JSONSourceMap.isWhitespace(byte) { break }
                index += 1
            }
        }
    }

    private mutating func skipWhitespace() {
        while index < bytes.count, JSONSourceMap.isWhitespace(bytes[index]) { index += 1 }
    }

    /// Reads a member name, escapes decoded, and leaves `index` after its closing quote.
    private mutating func key() -> String {
        let start = index
        var escaped = false
        index += 1
        while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
            if bytes[index] == UInt8(ascii: "\\") {
                escaped = true
                index += 1
            }
            index += 1
        }
        index += 1
        if !escaped { return String(decoding: bytes[(start + 1)..<(index - 1)], as: UTF8.self) }
        // The name is a JSON string literal on its own: let the parser decode its escapes.
        return (try? JSONParser.parse(bytes[start..<index]))?.stringValue ?? ""
    }

    private mutating func skipString() {
        index += 1
        while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
            index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
        }
        index += 1
    }

    /// Skips an object or array without building paths for what is inside.
    private mutating func skipContainer() {
        var depth = 0
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\""):
                skipString()
                continue
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                if depth == 0 {
                    index += 1
                    return
                }
            default:
                break
            }
            index += 1
        }
    }
}
