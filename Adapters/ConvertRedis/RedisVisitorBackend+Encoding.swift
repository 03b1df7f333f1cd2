import ConvertJSON
import ConvertStorage
import ConvertSynchronization
import ConvertVisitor
import Foundation

// A visitor record as Redis hash fields, and back.
extension RedisVisitorBackend {
    static func writes(_ key: String, _ data: VisitorData, ttl: Duration?) -> [RedisCommand] {
        var commands: [RedisCommand] = []
        data.forEachDecision { experience, variation in
            commands.append(.hsetnx(key, decisionField(experience.string), Data(variation.string.utf8)))
        }
        for goal in data.storedGoals.sorted() {
            commands.append(.hsetnx(key, "g:" + goal, Data("1".utf8)))
        }
        var replaced: [String: Data] = [:]
        if data.hasLocations { replaced["l"] = VisitorJSON.locations(data.locations) }
        if let segments = data.storedSegmentValues, !segments.isEmpty { replaced["s"] = VisitorJSON.object(NonFiniteValues.listing(in: segments)) }
        if !replaced.isEmpty { commands.append(.hset(key, replaced)) }
        if let ttl { commands.append(.expire(key, ttl: ttl)) }
        return commands
    }

    /// The visitor data in an `HGETALL` reply; `nil` for an empty hash (an unknown visitor).
    static func decode(_ reply: RESPValue, key: String) throws -> VisitorData? {
        guard case .array(let elements) = reply else { throw RedisError.protocolError(reason: "HGETALL answered a \(reply.summary)") }
        guard let flat = elements, !flat.isEmpty else { return nil }
        guard flat.count.isMultiple(of: 2) else {
            throw RedisError.protocolError(reason: "HGETALL answered an odd number (\(flat.count)) of elements")
        }
        var data = VisitorData()
        var recognized = 0
        var names: [String] = []
        var index = 0
        while index < flat.count {
            guard case .bulkString(let nameBytes?) = flat[index], case .bulkString(let value?) = flat[index + 1] else {
                throw RedisError.protocolError(reason: "HGETALL answered a field that is not a string")
            }
            index += 2
            let name = String(decoding: nameBytes, as: UTF8.self)
            if name.hasPrefix("d:") {
                data.setVariation(InternedId(String(decoding: value, as: UTF8.self)), forExperience: InternedId(String(name.dropFirst(2))))
                recognized += 1
            } else if name.hasPrefix("g:") {
                data.insertGoal(InternedId(String(name.dropFirst(2))))
                recognized += 1
            } else if name == "l" {
                let locations = try DecodedFields.shared.locations(value) { () throws(InvalidRecord) -> [InternedId] in
                    guard case .array(let list)? = try? JSONParser.parse(value), list.allSatisfy({ $0.stringValue != nil }) else {
                        throw InvalidRecord(key: key, reason: "field l is not a JSON list of locations")
                    }
                    return list.compactMap { $0.stringValue.map(InternedId.init) }
                }
                for location in locations { data.insertLocation(location) }
                recognized += 1
            } else if name == "s" {
                let segments = try DecodedFields.shared.segments(value) { () throws(InvalidRecord) -> VisitorData in
                    guard case .object(let segments)? = try? JSONParser.parse(value) else {
                        throw InvalidRecord(key: key, reason: "field s is not JSON segments")
                    }
                    var holder = VisitorData()
                    holder.segmentValues = NonFiniteValues.restoringListed(in: segments)
                    return holder
                }
                data.adoptSegments(of: segments)
                recognized += 1
            } else if names.count < 5 {
                names.append(name)
            }
        }
        guard recognized > 0 else {
            throw InvalidRecord(key: key, reason: "no field of visitor data (fields: \(names.sorted().joined(separator: ", ")))")
        }
        return data
    }
}

/// The `l` and `s` fields of records loaded last, decoded, by their bytes: a site's visitors
/// mostly repeat a few segment sets and locations, so most loads find them here instead of
/// parsing JSON and interning again. Decoding is a function of the bytes alone, so an entry
/// found is what parsing would give. A few entries a field, replaced in turn.
final class DecodedFields: Sendable {
    static let shared = DecodedFields()
    static let capacity = 8

    /// Decoded values by their bytes, replaced in turn once full.
    private struct Table<Value: Sendable>: Sendable {
        var entries: [(bytes: Data, value: Value)] = []
        var next = 0

        func value(for bytes: Data) -> Value? { entries.first { $0.bytes == bytes }?.value }

        mutating func add(_ bytes: Data, _ value: Value) {
            // The bytes in storage of their own: a reply's field may be a slice of a larger
            // read, which the entry would otherwise keep alive.
            let entry = (Data(Array(bytes)), value)
            if entries.count < DecodedFields.capacity {
                entries.append(entry)
            } else {
                entries[next] = entry
                next = (next + 1) % DecodedFields.capacity
            }
        }
    }

    private struct Tables: Sendable {
        var segments = Table<VisitorData>()
        var locations = Table<[InternedId]>()
    }

    private let tables = Locked(Tables())

    /// The segments `bytes` hold (in a holder's data), decoded by `decode` when not known.
    func segments(_ bytes: Data, decode: () throws(RedisVisitorBackend.InvalidRecord) -> VisitorData)
        throws(RedisVisitorBackend.InvalidRecord) -> VisitorData {
        try decoded(bytes, \.segments, decode)
    }

    /// The locations `bytes` hold, decoded by `decode` when not known.
    func locations(_ bytes: Data, decode: () throws(RedisVisitorBackend.InvalidRecord) -> [InternedId])
        throws(RedisVisitorBackend.InvalidRecord) -> [InternedId] {
        try decoded(bytes, \.locations, decode)
    }

    private func decoded<Value: Sendable>(_ bytes: Data, _ table: WritableKeyPath<Tables, Table<Value>>,
                                _ decode: () throws(RedisVisitorBackend.InvalidRecord) -> Value)
        throws(RedisVisitorBackend.InvalidRecord) -> Value {
        if let found = tables.withValue({ $0[keyPath: table].value(for: bytes) }) { return found }
        let value = try decode()
        tables.withValue { $0[keyPath: table].add(bytes, value) }
        return value
    }
}
