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

    private struct Entries {
        var segments: [(bytes: Data, data: VisitorData)] = []
        var locations: [(bytes: Data, ids: [InternedId])] = []
        var nextSegments = 0
        var nextLocations = 0
    }

    private let entries = Locked(Entries())

    /// The bytes in storage of their own: a reply's field may be a slice of a larger read, which
    /// an entry would otherwise keep alive.
    private static func compact(_ bytes: Data) -> Data { Data(Array(bytes)) }

    /// The segments `bytes` hold (in a holder's data), decoded by `decode` when not known.
    func segments(_ bytes: Data, decode: () throws(RedisVisitorBackend.InvalidRecord) -> VisitorData) throws(RedisVisitorBackend.InvalidRecord) -> VisitorData {
        if let found = entries.withValue({ $0.segments.first { $0.bytes == bytes }?.data }) { return found }
        let data = try decode()
        entries.withValue { entries in
            if entries.segments.count < Self.capacity {
                entries.segments.append((Self.compact(bytes), data))
            } else {
                entries.segments[entries.nextSegments] = (Self.compact(bytes), data)
                entries.nextSegments = (entries.nextSegments + 1) % Self.capacity
            }
        }
        return data
    }

    /// The locations `bytes` hold, decoded by `decode` when not known.
    func locations(_ bytes: Data, decode: () throws(RedisVisitorBackend.InvalidRecord) -> [InternedId]) throws(RedisVisitorBackend.InvalidRecord) -> [InternedId] {
        if let found = entries.withValue({ $0.locations.first { $0.bytes == bytes }?.ids }) { return found }
        let ids = try decode()
        entries.withValue { entries in
            if entries.locations.count < Self.capacity {
                entries.locations.append((Self.compact(bytes), ids))
            } else {
                entries.locations[entries.nextLocations] = (Self.compact(bytes), ids)
                entries.nextLocations = (entries.nextLocations + 1) % Self.capacity
            }
        }
        return ids
    }
}
