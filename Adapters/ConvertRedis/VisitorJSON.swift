import ConvertJSON
import ConvertVisitor
import Foundation

/// The JSON of the `l` and `s` fields, written directly (keys sorted, so equal data is equal bytes).
enum VisitorJSON {
    static func locations(_ locations: Set<String>) -> Data {
        var out: [UInt8] = []
        appendLocations(locations, to: &out)
        return Data(out)
    }

    static func appendLocations(_ locations: Set<String>, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "["))
        for (index, location) in (locations.count > 1 ? locations.sorted() : Array(locations)).enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            appendString(location, to: &out)
        }
        out.append(UInt8(ascii: "]"))
    }

    static func object(_ members: [String: JSONValue]) -> Data {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        append(.object(members), to: &out)
        return Data(out)
    }

    static func append(_ value: JSONValue, to out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let flag): out.append(contentsOf: (flag ? "true" : "false").utf8)
        case .number(let number):
            // As JSON.stringify: no NaN or Infinity in JSON.
            if !number.isFinite {
                out.append(contentsOf: "null".utf8)
            } else if number == number.rounded(), abs(number) < 9_007_199_254_740_992 {
                out.append(contentsOf: String(Int64(number)).utf8)
            } else {
                out.append(contentsOf: "\(number)".utf8)
            }
        case .string(let text): appendString(text, to: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                append(element, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, name) in members.keys.sorted().enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                appendString(name, to: &out)
                out.append(UInt8(ascii: ":"))
                append(members[name]!, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    static func appendString(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Most ids and values need no escaping: copied whole.
        if !text.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            var text = text
            text.withUTF8 { out.append(contentsOf: $0) }
            out.append(UInt8(ascii: "\""))
            return
        }
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: "\\\"".utf8)
            case UInt8(ascii: "\\"): out.append(contentsOf: "\\\\".utf8)
            case 0x0A: out.append(contentsOf: "\\n".utf8)
            case 0x0D: out.append(contentsOf: "\\r".utf8)
            case 0x09: out.append(contentsOf: "\\t".utf8)
            case 0..<0x20:
                let digits = Array("0123456789abcdef".utf8)
                out.append(contentsOf: "\\u00".utf8)
                out.append(digits[Int(byte >> 4)])
                out.append(digits[Int(byte & 0xF)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
