import ConvertTracking
import ConvertVisitor
import Foundation

extension TrackingBatch {
    /// The JSON body of `events` (all of one project), written directly from them: the same
    /// bytes as `JSONEncoder` writes for `TrackingBatch(events:source:enrichData:)`, with sorted
    /// keys and unescaped slashes (held equal by the tests), several times faster. Batches
    /// carrying goal data (numbers whose printing is Foundation's own) are encoded by
    /// `JSONEncoder`.
    package static func body(of events: [TrackingEvent], source: String = "ios-sdk", enrichData: Bool = true) throws -> Data {
        if let bytes = written(events, source: source, enrichData: enrichData) { return Data(bytes) }
        return try TrackingBatch(events: events, source: source, enrichData: enrichData).encodedByFoundation()
    }

    /// The body through `JSONEncoder`.
    package func encodedByFoundation() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }

    /// Groups `events` by visitor, by position (no event is copied): per visitor in first-seen
    /// order its first event and the latest carrying segments (-1: none); `next` links each
    /// visitor's events in order (-1 ends them).
    static func visitorGroups(_ events: [TrackingEvent]) -> (first: [Int], next: [Int], segments: [Int]) {
        var first: [Int] = [], last: [Int] = [], segments: [Int] = []
        var next = [Int](repeating: -1, count: events.count)
        var visitorOf: [String: Int] = [:]
        visitorOf.reserveCapacity(events.count)
        var previous = -1
        // By position, not by element: an event copied out would retain each of its strings.
        for index in events.indices {
            let visitor: Int
            let visitorId = events[index].visitorId
            // A visitor's events mostly follow one another: the previous one is checked first.
            if previous >= 0, events[first[previous]].visitorId == visitorId {
                visitor = previous
            } else if let known = visitorOf[visitorId] {
                visitor = known
            } else {
                visitor = first.count
                visitorOf[visitorId] = visitor
                first.append(index)
                last.append(index)
                segments.append(-1)
            }
            if last[visitor] != index {
                next[last[visitor]] = index
                last[visitor] = index
            }
            if case .some = events[index].segments { segments[visitor] = index }
            previous = visitor
        }
        return (first, next, segments)
    }

    /// The body in bytes, or `nil` when an event carries goal data. Visitors are grouped by
    /// ``visitorGroups(_:)``, as ``init(events:source:enrichData:)`` groups them.
    package static func written(_ events: [TrackingEvent], source: String, enrichData: Bool) -> [UInt8]? {
        let (first, next, segments) = visitorGroups(events)
        var out = JSONBytes(capacity: 128 + events.count * 160)
        out.raw(#"{"accountId":"#)
        out.string(events.first?.accountId ?? "")
        out.raw(enrichData ? #","enrichData":true,"projectId":"# : #","enrichData":false,"projectId":"#)
        out.string(events.first?.projectId ?? "")
        out.raw(#","source":"#)
        out.string(source)
        out.raw(#","visitors":["#)
        for visitor in first.indices {
            if visitor > 0 { out.byte(UInt8(ascii: ",")) }
            out.raw(#"{"events":["#)
            var index = first[visitor]
            while index >= 0 {
                if index != first[visitor] { out.byte(UInt8(ascii: ",")) }
                switch events[index].payload {
                case .bucketing(let experienceId, let variationId):
                    out.raw(#"{"data":{"experienceId":"#)
                    out.string(experienceId)
                    out.raw(#","variationId":"#)
                    out.string(variationId)
                    out.raw(#"},"eventType":"bucketing"}"#)
                case .conversion(let goalId, let goalData, let bucketingData):
                    guard goalData == nil else { return nil }
                    out.raw(#"{"data":{"#)
                    if let bucketingData {
                        out.raw(#""bucketingData":{"#)
                        for (n, key) in bucketingData.keys.sorted(by: JSONBytes.precedes).enumerated() {
                            if n > 0 { out.byte(UInt8(ascii: ",")) }
                            out.string(key)
                            out.byte(UInt8(ascii: ":"))
                            out.string(bucketingData[key]!)
                        }
                        out.raw(#"},"#)
                    }
                    out.raw(#""goalId":"#)
                    out.string(goalId)
                    out.raw(#"},"eventType":"conversion"}"#)
                }
                index = next[index]
            }
            out.byte(UInt8(ascii: "]"))
            if segments[visitor] >= 0, let carried = events[segments[visitor]].segments {
                out.raw(#","segments":"#)
                out.segments(carried)
            }
            out.raw(#","visitorId":"#)
            out.string(events[first[visitor]].visitorId)
            out.byte(UInt8(ascii: "}"))
        }
        out.raw("]}")
        return out.bytes
    }
}

/// JSON text as `JSONEncoder` writes it: strings escaped the same way, keys in byte order.
struct JSONBytes {
    var bytes: [UInt8] = []

    init(capacity: Int) {
        bytes.reserveCapacity(capacity)
    }

    mutating func byte(_ byte: UInt8) {
        bytes.append(byte)
    }

    /// Text that needs no escaping (the writer's own keys and punctuation).
    mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        // A native string's bytes are read in place; copying the string to reach them would
        // retain its storage.
        if text.utf8.withContiguousStorageIfAvailable({ escaped($0) }) == nil {
            var text = text
            text.withUTF8 { escaped($0) }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// `utf8` as a JSON string's contents, escaped as `JSONEncoder` escapes them.
    private mutating func escaped(_ utf8: UnsafeBufferPointer<UInt8>) {
        var start = 0
        for (index, byte) in utf8.enumerated() where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
            bytes.append(contentsOf: utf8[start..<index])
            start = index + 1
            bytes.append(UInt8(ascii: "\\"))
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
            case 0x08: bytes.append(UInt8(ascii: "b"))
            case 0x0C: bytes.append(UInt8(ascii: "f"))
            case 0x0A: bytes.append(UInt8(ascii: "n"))
            case 0x0D: bytes.append(UInt8(ascii: "r"))
            case 0x09: bytes.append(UInt8(ascii: "t"))
            default:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                          hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
            }
        }
        bytes.append(contentsOf: utf8[start...])
    }

    mutating func strings(_ values: [String]) {
        bytes.append(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            string(value)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// The segments' present members, in key order.
    mutating func segments(_ segments: VisitorSegments) {
        var first = true
        func key(_ name: StaticString) {
            raw(first ? "{\"" : ",\"")
            first = false
            raw(name)
            raw("\":")
        }
        if let browser = segments.browser { key("browser"); string(browser) }
        if let campaign = segments.campaign { key("campaign"); string(campaign) }
        if let country = segments.country { key("country"); string(country) }
        if let custom = segments.customSegments { key("customSegments"); strings(custom) }
        if let devices = segments.devices { key("devices"); strings(devices) }
        if let source = segments.source { key("source"); string(source) }
        if let visitorType = segments.visitorType { key("visitorType"); string(visitorType) }
        raw(first ? "{}" : "}")
    }

    /// `JSONEncoder`'s sorted-keys order: by UTF-8 bytes.
    static func precedes(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }
}
