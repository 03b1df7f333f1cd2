import ConvertJSON
import ConvertStorage
import ConvertVisitor
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes one change-log line by hand: the same JSON `JSONEncoder` would produce for an entry,
/// at a fraction of the cost on the decision path.
enum ChangeLine {
    private struct Entry: Decodable {
        let k: String
        let d: VisitorData
    }

    /// The record in a line's content, `nil` when it is not one. Lines in the shape `encode`
    /// writes are read by hand (a store of 200,000 visitors loads in a fraction of the time);
    /// anything else goes through `JSONDecoder`.
    static func decode(_ content: ArraySlice<UInt8>, decoder: JSONDecoder) -> (key: VisitorKey, data: VisitorData)? {
        if let record = content.withUnsafeBufferPointer({ bytes -> (VisitorKey, VisitorData)? in
            var reader = Reader(bytes: bytes)
            return reader.record()
        }) {
            return record
        }
        guard let entry = try? decoder.decode(Entry.self, from: Data(content)), let key = VisitorKey(storeKey: entry.k) else {
            return nil
        }
        return (key, entry.d)
    }

    static func encode(key: String, data: VisitorData) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(96 + key.utf8.count)
        out += Array(#"{"d":{"bucketing":{"#.utf8)
        var first = true
        for (experience, variation) in data.bucketing {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            string(experience, &out)
            out.append(UInt8(ascii: ":"))
            string(variation, &out)
        }
        out += Array(#"},"goals":"#.utf8)
        list(data.storedGoals, &out)
        out += Array(#","locations":"#.utf8)
        list(data.locations, &out)
        out += Array(#","segments":"#.utf8)
        segments(data.segmentValues, &out)
        // JSON has no NaN or infinity: written null above, listed here so that they read back
        // (through `JSONDecoder`, as `VisitorData` decodes them).
        if let values = data.storedSegmentValues, values.values.contains(where: \.holdsNonFinite) {
            out += Array(#","nonFinite":"#.utf8)
            json(.array(NonFiniteValues.paths(in: values)), &out)
        }
        out += Array(#"},"k":"#.utf8)
        string(key, &out)
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// The report segments as a JSON object, keys in wire order, absent keys left out, each
    /// value as the visitor gave it.
    private static func segments(_ values: [String: JSONValue], _ out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        var first = true
        for key in VisitorSegments.reportKeys {
            guard let value = values[key] else { continue }
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            string(key, &out)
            out.append(UInt8(ascii: ":"))
            json(value, &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    /// Any JSON value; object members sorted by name so equal values write equal lines.
    private static func json(_ value: JSONValue, _ out: inout [UInt8]) {
        switch value {
        case .null: out += Array("null".utf8)
        case .bool(let flag): out += Array((flag ? "true" : "false").utf8)
        case .number(let number):
            // ECMAScript's shortest form reads back to the same double; JSON has no NaN or infinity.
            if !number.isFinite {
                out += Array("null".utf8)
            } else if number == 0 && number.sign == .minus {
                out += Array("-0".utf8)
            } else {
                out += Array(JavaScriptNumber.string(number).utf8)
            }
        case .string(let text): string(text, &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (i, element) in elements.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                json(element, &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (i, name) in members.keys.sorted().enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                string(name, &out)
                out.append(UInt8(ascii: ":"))
                json(members[name] ?? .null, &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static func list(_ values: Set<String>, _ out: inout [UInt8]) {
        out.append(UInt8(ascii: "["))
        var first = true
        for value in values {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            string(value, &out)
        }
        out.append(UInt8(ascii: "]"))
    }

    private static func string(_ text: String, _ out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out += [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                        hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

extension JSONValue {
    /// Whether a NaN or an infinity is in this value.
    fileprivate var holdsNonFinite: Bool {
        switch self {
        case .number(let number): !number.isFinite
        case .array(let items): items.contains(where: \.holdsNonFinite)
        case .object(let members): members.values.contains(where: \.holdsNonFinite)
        case .string, .bool, .null: false
        }
    }
}

/// Reads exactly the shape `ChangeLine.encode` writes; `nil` for anything else.
private struct Reader {
    let bytes: UnsafeBufferPointer<UInt8>
    var i = 0

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    mutating func record() -> (VisitorKey, VisitorData)? {
        guard literal(#"{"d":{"bucketing":{"#), let bucketing = pairs(), literal(#","goals":"#), let goals = list(),
              literal(#","locations":"#), let locations = list(), literal(#","segments":"#), let segments = segments(),
              literal(#"},"k":"#), let storeKey = string(), literal("}"), i == bytes.count,
              let key = VisitorKey(storeKey: storeKey) else {
            return nil
        }
        return (key, VisitorData(bucketing: bucketing, goals: goals, segmentValues: segments, locations: locations))
    }

    /// `{…}` with the report keys in the order `encode` writes them, each a string or a list of
    /// strings (the usual values); `nil` for anything else, which `JSONDecoder` then reads.
    private mutating func segments() -> [String: JSONValue]? {
        guard byte(UInt8(ascii: "{")) else { return nil }
        var segments: [String: JSONValue] = [:]
        if byte(UInt8(ascii: "}")) { return segments }
        var first = true
        for name in VisitorSegments.reportKeys {
            let mark = i
            if !first && !byte(UInt8(ascii: ",")) { break }
            guard let key = string(), key == name else {
                i = mark
                continue
            }
            guard byte(UInt8(ascii: ":")) else { return nil }
            first = false
            if let text = string() {
                segments[name] = .string(text)
            } else if let list = orderedList() {
                segments[name] = .array(list.map(JSONValue.string))
            } else {
                return nil
            }
        }
        return byte(UInt8(ascii: "}")) ? segments : nil
    }

    /// `["a",…]`, in order.
    private mutating func orderedList() -> [String]? {
        guard byte(UInt8(ascii: "[")) else { return nil }
        var out: [String] = []
        if byte(UInt8(ascii: "]")) { return out }
        repeat {
            guard let value = string() else { return nil }
            out.append(value)
        } while byte(UInt8(ascii: ","))
        return byte(UInt8(ascii: "]")) ? out : nil
    }

    private mutating func literal(_ text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard bytes.count - i >= count, memcmp(bytes.baseAddress! + i, text.utf8Start, count) == 0 else { return false }
        i += count
        return true
    }

    private mutating func byte(_ expected: UInt8) -> Bool {
        guard i < bytes.count, bytes[i] == expected else { return false }
        i += 1
        return true
    }

    /// `"E":"V",…}` after the opening brace.
    private mutating func pairs() -> [String: String]? {
        var out: [String: String] = [:]
        if byte(UInt8(ascii: "}")) { return out }
        repeat {
            guard let name = string(), byte(UInt8(ascii: ":")), let value = string() else { return nil }
            out[name] = value
        } while byte(UInt8(ascii: ","))
        return byte(UInt8(ascii: "}")) ? out : nil
    }

    /// `["a",…]`.
    private mutating func list() -> Set<String>? {
        guard byte(UInt8(ascii: "[")) else { return nil }
        var out = Set<String>()
        if byte(UInt8(ascii: "]")) { return out }
        repeat {
            guard let value = string() else { return nil }
            out.insert(value)
        } while byte(UInt8(ascii: ","))
        return byte(UInt8(ascii: "]")) ? out : nil
    }

    /// A JSON string whose escapes are the ones `encode` writes; anything else gives `nil`.
    private mutating func string() -> String? {
        guard byte(UInt8(ascii: "\"")) else { return nil }
        let start = i
        var plain = true
        while i < bytes.count, bytes[i] != UInt8(ascii: "\"") {
            if bytes[i] == UInt8(ascii: "\\") {
                plain = false
                i += 1
            } else if bytes[i] < 0x20 {
                return nil
            }
            i += 1
        }
        guard i < bytes.count else { return nil }
        let raw = UnsafeBufferPointer(rebasing: bytes[start..<i])
        i += 1
        if plain { return String(validating: raw, as: UTF8.self) }
        var out: [UInt8] = []
        var j = 0
        while j < raw.count {
            guard raw[j] == UInt8(ascii: "\\") else {
                out.append(raw[j])
                j += 1
                continue
            }
            guard j + 1 < raw.count else { return nil }
            switch raw[j + 1] {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                out.append(raw[j + 1])
                j += 2
            case UInt8(ascii: "u"):
                guard j + 6 <= raw.count, raw[j + 2] == UInt8(ascii: "0"), raw[j + 3] == UInt8(ascii: "0"),
                      let high = hex(raw[j + 4]), let low = hex(raw[j + 5]), high < 2 else { return nil }
                out.append(high << 4 | low)
                j += 6
            default:
                return nil
            }
        }
        return String(validating: out, as: UTF8.self)
    }

    private func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        default: return nil
        }
    }
}
