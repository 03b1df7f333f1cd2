import ConvertJSON
import ConvertStorage
import ConvertVisitor
import Foundation

/// Visitor data in Redis (or any single-endpoint server speaking RESP, such as Valkey): one hash
/// per visitor, shared by every SDK instance pointed at the server.
///
/// ```swift
/// let redis = RedisClient(configuration: RedisConfiguration(host: "10.0.0.5", keyPrefix: "convert:", ttl: .seconds(30 * 86_400)))
/// let store = WriteBehindVisitorStore(backend: RedisVisitorBackend(client: redis), local: MemoryVisitorDataStore())
/// ```
///
/// The hash at `visitor:{accountId}-{projectId}:{visitorId}` (after the client's key prefix) has
/// a field `d:{experienceId}` per sticky decision and `g:{goalId}` per converted goal, both set
/// with `HSETNX`, so the first instance to write one wins; `l` holds the matched locations and
/// `s` the segments (JSON), replaced by the latest save. The client's `ttl`, when set, is
/// renewed on every save. Cluster routing is not supported: use one endpoint (a primary, a
/// proxy, or a cluster-aware proxy in front of a cluster).
public struct RedisVisitorBackend: VisitorDataBackend {
    /// A hash under a visitor's key that this backend did not write.
    public struct InvalidRecord: Error, Sendable, Hashable, CustomStringConvertible {
        /// The Redis key (before the client's prefix).
        public let key: String
        /// What is wrong with its value.
        public let reason: String
        public var description: String { "Redis key \(key) does not hold visitor data: \(reason)" }
    }

    private let client: RedisClient

    /// Visitor data through `client`, with its key prefix and TTL.
    public init(client: RedisClient) {
        self.client = client
    }

    /// The Redis key of a visitor (before the client's prefix): where to inspect or delete its data.
    public static func redisKey(_ key: VisitorKey) -> String {
        "visitor:\(key.namespace):\(key.visitorId)"
    }

    public func load(_ key: VisitorKey) async throws -> VisitorData? {
        let redisKey = Self.redisKey(key)
        let fields = try await client.hgetall(redisKey)
        return fields.isEmpty ? nil : try Self.decode(fields, key: redisKey)
    }

    public func save(_ key: VisitorKey, _ data: VisitorData) async throws -> VisitorData {
        try await saveAll([(key, data)])[0]
    }

    /// Every record's writes and a read-back in one pipeline: one round trip for the batch.
    public func saveAll(_ records: [(VisitorKey, VisitorData)]) async throws -> [VisitorData] {
        guard !records.isEmpty else { return [] }
        var commands: [RedisCommand] = []
        var spans: [(start: Int, readBack: Int)] = []
        for (key, data) in records {
            let start = commands.count
            commands += try Self.writes(Self.redisKey(key), data, ttl: client.configuration.ttl)
            spans.append((start, commands.count))
            commands.append(.hgetall(Self.redisKey(key)))
        }
        let replies = try await client.pipeline(commands)
        var out: [VisitorData] = []
        out.reserveCapacity(records.count)
        for ((key, _), span) in zip(records, spans) {
            var readBack: RESPValue?
            for reply in replies[span.start...span.readBack] {
                switch reply {
                case .failure(let error): throw error  // WRONGTYPE: the key holds something else
                case .success(let value): readBack = value
                }
            }
            guard let readBack else { throw InvalidRecord(key: Self.redisKey(key), reason: "no reply") }
            out.append(try Self.decode(readBack.hashFields(), key: Self.redisKey(key)))
        }
        return out
    }

    public func recordGoalOnce(_ key: VisitorKey, goalId: String) async throws -> Bool {
        let redisKey = Self.redisKey(key)
        var commands: [RedisCommand] = [.hsetnx(redisKey, "g:" + goalId, Data("1".utf8))]
        if let ttl = client.configuration.ttl { commands.append(.expire(redisKey, ttl: ttl)) }
        let replies = try await client.pipeline(commands)
        guard case .success(let reply) = replies[0] else {
            if case .failure(let error) = replies[0] { throw error }
            return false
        }
        return reply.intValue == 1
    }

    // MARK: Encoding

    private static func writes(_ key: String, _ data: VisitorData, ttl: Duration?) throws -> [RedisCommand] {
        var commands: [RedisCommand] = []
        for (experience, variation) in data.bucketing.sorted(by: { $0.key < $1.key }) {
            commands.append(.hsetnx(key, "d:" + experience, Data(variation.utf8)))
        }
        for goal in data.goals.sorted() {
            commands.append(.hsetnx(key, "g:" + goal, Data("1".utf8)))
        }
        var replaced: [String: Data] = [:]
        if !data.locations.isEmpty { replaced["l"] = try JSONEncoder().encode(data.locations.sorted()) }
        if !data.segmentValues.isEmpty { replaced["s"] = try JSONEncoder().encode(data.segmentValues) }
        if !replaced.isEmpty { commands.append(.hset(key, replaced)) }
        if let ttl { commands.append(.expire(key, ttl: ttl)) }
        return commands
    }

    static func decode(_ fields: [String: Data], key: String) throws -> VisitorData {
        var bucketing: [String: String] = [:]
        var goals: Set<String> = []
        var locations: Set<String> = []
        var segments: [String: JSONValue] = [:]
        var recognized = 0
        for (name, value) in fields {
            if name.hasPrefix("d:") {
                bucketing[String(name.dropFirst(2))] = String(decoding: value, as: UTF8.self)
                recognized += 1
            } else if name.hasPrefix("g:") {
                goals.insert(String(name.dropFirst(2)))
                recognized += 1
            } else if name == "l" {
                guard let list = try? JSONDecoder().decode([String].self, from: value) else {
                    throw InvalidRecord(key: key, reason: "field l is not a JSON list of locations")
                }
                locations = Set(list)
                recognized += 1
            } else if name == "s" {
                guard let decoded = try? JSONDecoder().decode([String: JSONValue].self, from: value) else {
                    throw InvalidRecord(key: key, reason: "field s is not JSON segments")
                }
                segments = decoded
                recognized += 1
            }
        }
        guard recognized > 0 || fields.isEmpty else {
            throw InvalidRecord(key: key, reason: "no field of visitor data (fields: \(fields.keys.sorted().prefix(5).joined(separator: ", ")))")
        }
        return VisitorData(bucketing: bucketing, goals: goals, segmentValues: segments, locations: locations)
    }
}
