import ConvertModel
import ConvertRules
import Foundation

/// Turns a config document into hostile variants: types changed, keys dropped and duplicated,
/// deep nesting, huge numbers, long strings, invalid UTF-8, truncation. Used by the fuzz
/// harness in the tests and by the libFuzzer target's seed corpus.
public struct ConfigMutator {
    private var random: SeededGenerator

    /// A mutator whose variants are fixed by `seed`, so a failing case replays.
    public init(seed: UInt64) { random = SeededGenerator(seed: seed) }

    /// One mutated document derived from `bytes` (a JSON config).
    public mutating func mutate(_ bytes: [UInt8]) -> [UInt8] {
        switch Int.random(in: 0..<10, using: &random) {
        case 0: return byteLevel(bytes)
        case 1: return truncated(bytes)
        default:
            guard let json = try? JSONParser.parse(bytes) else { return byteLevel(bytes) }
            var value = json
            for _ in 0..<Int.random(in: 1...4, using: &random) { value = structural(value, depth: 0) }
            var out = Array(Self.encode(value).utf8)
            if Int.random(in: 0..<8, using: &random) == 0 { out = duplicateKey(out) }
            return out
        }
    }

    private mutating func byteLevel(_ bytes: [UInt8]) -> [UInt8] {
        var out = bytes
        for _ in 0..<Int.random(in: 1...8, using: &random) where !out.isEmpty {
            let at = Int.random(in: 0..<out.count, using: &random)
            switch Int.random(in: 0..<4, using: &random) {
            case 0: out[at] = UInt8.random(in: 0...255, using: &random)
            case 1: out.insert(contentsOf: [0xC3, 0x28, 0xFF, 0xFE], at: at)
            case 2: out.remove(at: at)
            default: out.insert(contentsOf: Array("\"\\ud800\"".utf8), at: at)
            }
        }
        return out
    }

    private mutating func truncated(_ bytes: [UInt8]) -> [UInt8] {
        Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &random)))
    }

    private mutating func duplicateKey(_ bytes: [UInt8]) -> [UInt8] {
        guard let brace = bytes.firstIndex(of: UInt8(ascii: "{")) else { return bytes }
        var out = bytes
        out.insert(contentsOf: Array("\"account_id\":[1,{}],".utf8), at: brace + 1)
        return out
    }

    private mutating func replacement() -> JSONValue {
        switch Int.random(in: 0..<12, using: &random) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &random))
        case 2: return .number(1e308 * 10)
        case 3: return .number(-Double.greatestFiniteMagnitude)
        case 4: return .number(Double(Int.random(in: -5...5, using: &random)))
        case 5: return .string(String(repeating: "x", count: Int.random(in: 0...20_000, using: &random)))
        case 6: return .string("\u{0}\u{FFFD}\u{1F680}")
        case 7: return .array([])
        case 8: return .object([:])
        case 9: return deepNesting(Int.random(in: 10...600, using: &random))
        case 10: return .string("(unclosed[regex")
        default: return .array([.null, .number(-0.0), .string("")])
        }
    }

    private func deepNesting(_ depth: Int) -> JSONValue {
        var value: JSONValue = ["OR": []]
        for i in 0..<depth { value = i % 2 == 0 ? .array([value]) : .object(["OR": value]) }
        return value
    }

    private mutating func structural(_ value: JSONValue, depth: Int) -> JSONValue {
        let stop = depth > 6 || Int.random(in: 0..<5, using: &random) == 0
        switch value {
        case .object(var members) where !members.isEmpty:
            let key = members.keys.sorted()[Int.random(in: 0..<members.count, using: &random)]
            if stop {
                switch Int.random(in: 0..<3, using: &random) {
                case 0: members[key] = nil
                case 1: members[key] = replacement()
                default: members["unknown_\(Int.random(in: 0..<1000, using: &random))"] = replacement()
                }
            } else {
                members[key] = structural(members[key]!, depth: depth + 1)
            }
            return .object(members)
        case .array(var elements) where !elements.isEmpty:
            let at = Int.random(in: 0..<elements.count, using: &random)
            if stop {
                switch Int.random(in: 0..<3, using: &random) {
                case 0: elements.remove(at: at)
                case 1: elements.append(elements[at])
                default: elements[at] = replacement()
                }
            } else {
                elements[at] = structural(elements[at], depth: depth + 1)
            }
            return .array(elements)
        default:
            return replacement()
        }
    }

    /// JSON text for a value (keys sorted; numbers that JSON cannot hold become huge literals).
    public static func encode(_ value: JSONValue) -> String {
        switch value {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .number(let n):
            if n.isNaN { return "0" }
            if n.isInfinite { return n > 0 ? "1e999" : "-1e999" }
            return JavaScriptNumber.string(n)
        case .string(let s):
            var out = "\""
            for scalar in s.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case "\n": out += "\\n"
                default:
                    if scalar.value < 0x20 { out += String(format: "\\u%04x", scalar.value) } else { out.unicodeScalars.append(scalar) }
                }
            }
            return out + "\""
        case .array(let elements): return "[" + elements.map(encode).joined(separator: ",") + "]"
        case .object(let members):
            return "{" + members.keys.sorted().map { encode(.string($0)) + ":" + encode(members[$0]!) }.joined(separator: ",") + "}"
        }
    }
}
