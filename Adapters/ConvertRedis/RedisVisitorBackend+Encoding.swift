import ConvertJSON
import ConvertStorage
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
                guard case .array(let list)? = try? JSONParser.parse(value), list.allSatisfy({ $0.stringValue != nil }) else {
                    throw InvalidRecord(key: key, reason: "field l is not a JSON list of locations")
                }
                for location in list { if let location = location.stringValue { data.insertLocation(InternedId(location)) } }
                recognized += 1
            } else if name == "s" {
                guard case .object(let segments)? = try? JSONParser.parse(value) else {
                    throw InvalidRecord(key: key, reason: "field s is not JSON segments")
                }
                data.segmentValues = NonFiniteValues.restoringListed(in: segments)
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
