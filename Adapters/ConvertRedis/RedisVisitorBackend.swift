import ConvertJSON
import ConvertStorage
import ConvertVisitor
import Foundation

/// Visitor data in Redis (or any server speaking RESP, such as Valkey), one endpoint or a cluster:
/// one hash per visitor, shared by every SDK instance pointed at the server.
///
/// ```swift
/// let redis = RedisClient(configuration: RedisConfiguration(host: "10.0.0.5", keyPrefix: "convert:", ttl: .seconds(30 * 86_400)))
/// let store = WriteBehindVisitorStore(backend: RedisVisitorBackend(client: redis), local: MemoryVisitorDataStore())
/// ```
///
/// The hash at `visitor:{accountId}-{projectId}:{visitorId}` (after the client's key prefix) has
/// a field `d:{experienceId}` per sticky decision and `g:{goalId}` per converted goal, both set
/// only when absent (`HSETNX`), so the first instance to write one wins; `l` holds the matched
/// locations and `s` the segments (JSON), replaced by the latest write. The client's `ttl`,
/// when set, is renewed on every write and claim.
///
/// Round trips: a load is one `HGETALL`; a claim is one pipeline (`HSETNX` of the decision's
/// field, its value read back, the time to live renewed); a goal record is one `HSETNX` with
/// the renewal pipelined; the writes behind are a batch's commands in one pipeline (and a second
/// round trip to read back decisions another instance stored first, only when some are). Over a
/// ``RedisClusterClient`` each of these goes to the master of the visitor's slot; the writes
/// behind are one pipeline per master.
///
/// On one endpoint, the key `visitors:marker` (after the prefix) marks the data set: a new
/// connection that finds it gone or replaced tells the shared store the server lost its data
/// (``VisitorDataBackendEvent/dataLost``), and the store writes its recent visitors again. A
/// cluster has no marker: a master that fails is replaced by its replica, which holds its data,
/// and calls to an unreachable master fail on their own. Its one event is every slot's master
/// reachable again after one was not (``VisitorDataBackendEvent/available(downFor:)``): the
/// store's pending writes then go at once, not at its next retry.
public struct RedisVisitorBackend: VisitorDataBackend, CustomStringConvertible {
    /// A hash under a visitor's key that this backend did not write.
    public struct InvalidRecord: VisitorRecordError, Sendable, Hashable, CustomStringConvertible {
        /// The Redis key (before the client's prefix).
        public let key: String
        /// What is wrong with its value.
        public let reason: String
        public var description: String { "Redis key \(key) does not hold visitor data: \(reason)" }
    }

    /// One endpoint or a cluster.
    private enum Connection: Sendable {
        case node(RedisClient)
        case cluster(RedisClusterClient)
    }

    private let connection: Connection
    /// Whether the backend speaks to a cluster.
    var isCluster: Bool {
        if case .cluster = connection { return true }
        return false
    }
    private var configuration: RedisConfiguration {
        switch connection {
        case .node(let client): client.configuration
        case .cluster(let cluster): cluster.configuration
        }
    }

    /// Visitor data through `client`, with its key prefix and TTL.
    public init(client: RedisClient) {
        connection = .node(client)
        client.watchDataSet(markerKey: Self.markerKey)
    }

    /// Visitor data in a cluster, through `cluster`, with its key prefix and TTL.
    public init(cluster: RedisClusterClient) {
        connection = .cluster(cluster)
    }

    /// `Redis at redis://host:port/db` (never the password), for log lines.
    public var description: String {
        switch connection {
        case .node(let client): "Redis at \(client.configuration)"
        case .cluster(let cluster): "Redis cluster at \(cluster.configuration)"
        }
    }

    private func send(_ command: RedisCommand) async throws -> RESPValue {
        switch connection {
        case .node(let client): return try await client.send(command)
        case .cluster(let cluster):
            do { return try await cluster.send(command) } catch { throw Self.classified(error) }
        }
    }

    private func pipeline(_ commands: [RedisCommand], slow: Bool = false) async throws -> [Result<RESPValue, RedisError>] {
        switch connection {
        case .node(let client): return try await client.pipeline(commands, slow: slow)
        case .cluster(let cluster):
            do { return try await cluster.pipeline(commands, slow: slow) } catch { throw Self.classified(error) }
        }
    }

    private func pipeline(_ commands: [RedisCommand]) throws -> [Result<RESPValue, RedisError>] {
        switch connection {
        case .node(let client): return try client.pipeline(commands)
        case .cluster(let cluster):
            do { return try cluster.pipeline(commands) } catch { throw Self.classified(error) }
        }
    }

    /// The Redis key of a visitor (before the client's prefix): where to inspect or delete its data.
    public static func redisKey(_ key: VisitorKey) -> String {
        "visitor:\(key.namespace):\(key.visitorId)"
    }

    /// The key whose disappearance says the server lost its data (before the client's prefix).
    public static let markerKey = "visitors:marker"

    /// The field of a decision for `experienceId`.
    static func decisionField(_ experienceId: String) -> String { "d:" + experienceId }

    /// The client's time to live in whole milliseconds (at least 1), `nil` without one.
    private var ttlMilliseconds: Int? {
        configuration.ttl.map { max(1, Int(clamping: $0.wholeMillisecondsRoundedUp)) }
    }

    public func load(_ key: VisitorKey) async throws -> VisitorData? {
        do {
            let redisKey = Self.redisKey(key)
            let reply: RESPValue
            do {
                reply = try await send(.hgetall(redisKey))
            } catch {
                throw Self.recordError(error, key: redisKey)
            }
            return try Self.decode(reply, key: redisKey)
        } catch {
            throw scoped(error)
        }
    }

    public func save(_ key: VisitorKey, _ data: VisitorData) async throws -> VisitorData {
        try await saveAll([(key, data)])[0]
    }

    /// Every record's writes and a read-back in one pipeline: one round trip for the batch.
    public func saveAll(_ records: [(VisitorKey, VisitorData)]) async throws -> [VisitorData] {
        do {
            guard !records.isEmpty else { return [] }
            var commands: [RedisCommand] = []
            var spans: [(start: Int, readBack: Int)] = []
            for (key, data) in records {
                let start = commands.count
                commands += Self.writes(Self.redisKey(key), data, ttl: configuration.ttl)
                spans.append((start, commands.count))
                commands.append(.hgetall(Self.redisKey(key)))
            }
            let replies = try await pipeline(commands, slow: records.count > 1)
            var out: [VisitorData] = []
            out.reserveCapacity(records.count)
            for ((key, _), span) in zip(records, spans) {
                var readBack: RESPValue?
                for reply in replies[span.start...span.readBack] {
                    switch reply {
                    case .failure(let error): throw Self.recordError(error, key: Self.redisKey(key))
                    case .success(let value): readBack = value
                    }
                }
                guard let readBack else { throw InvalidRecord(key: Self.redisKey(key), reason: "no reply") }
                out.append(try Self.decode(readBack, key: Self.redisKey(key)) ?? VisitorData())
            }
            return out
        } catch {
            throw scoped(error)
        }
    }

    public func recordGoalOnce(_ key: VisitorKey, goalId: String) async throws -> Bool {
        do {
            let redisKey = Self.redisKey(key)
            var commands: [RedisCommand] = [.hsetnx(redisKey, "g:" + goalId, Data("1".utf8))]
            if let ttl = configuration.ttl { commands.append(.expire(redisKey, ttl: ttl)) }
            let replies = try await pipeline(commands)
            do {
                return try replies[0].get().intValue == 1
            } catch {
                throw Self.recordError(error, key: redisKey)
            }
        } catch {
            throw scoped(error)
        }
    }

    /// One `DEL` of the visitor's hash.
    public func delete(_ key: VisitorKey) async throws {
        do {
            _ = try await send(.del([Self.redisKey(key)]))
        } catch {
            throw scoped(error)
        }
    }

    // MARK: Claims

    /// `HSETNX` of the decision's field, `HGET` of it and `PEXPIRE` of the hash (when a time to
    /// live is set), pipelined: one round trip. `HSETNX` alone decides who is first; the `HGET`
    /// behind it on the same connection reads the variation that holds (a decision field is only
    /// ever set if absent, so no other write can change it in between). Pipelined rather than a
    /// Lua script: the same answer without the script's server time.
    func claimCommands(_ redisKey: String, experienceId: String, variationId: String) -> [RedisCommand] {
        let field = Self.decisionField(experienceId)
        var commands: [RedisCommand] = [.hsetnx(redisKey, field, Data(variationId.utf8)), .hget(redisKey, field)]
        if let ttl = ttlMilliseconds { commands.append(["PEXPIRE", .key(redisKey), .integer(ttl)]) }
        return commands
    }

    public func claimVariation(_ key: VisitorKey, experienceId: String, variationId: String) throws -> VariationClaim {
        do {
            let redisKey = Self.redisKey(key)
            do {
                return try Self.claimed(pipeline(claimCommands(redisKey, experienceId: experienceId, variationId: variationId)),
                                        variationId: variationId, key: redisKey)
            } catch let error as RedisError {
                throw Self.recordError(error, key: redisKey)
            }
        } catch {
            throw scoped(error)
        }
    }

    public func claimVariationLater(_ key: VisitorKey, experienceId: String, variationId: String) async throws -> VariationClaim {
        do {
            let redisKey = Self.redisKey(key)
            do {
                return try Self.claimed(await pipeline(claimCommands(redisKey, experienceId: experienceId, variationId: variationId)),
                                        variationId: variationId, key: redisKey)
            } catch let error as RedisError {
                throw Self.recordError(error, key: redisKey)
            }
        } catch {
            throw scoped(error)
        }
    }

    private static func claimed(_ replies: [Result<RESPValue, RedisError>], variationId: String, key: String) throws -> VariationClaim {
        guard replies.count >= 2 else { throw InvalidRecord(key: key, reason: "the claim got \(replies.count) answers") }
        let won = try replies[0].get(), held = try replies[1].get()
        guard let first = won.intValue else { throw InvalidRecord(key: key, reason: "the claim's HSETNX answered a \(won.summary)") }
        switch held {
        case .bulkString(let bytes?):
            return VariationClaim(variationId: String(decoding: bytes, as: UTF8.self), isFirst: first == 1)
        case .bulkString(nil):
            // Deleted in between (the visitor forgotten): this decision is the one that holds.
            return VariationClaim(variationId: variationId, isFirst: first == 1)
        default:
            throw InvalidRecord(key: key, reason: "the claim's HGET answered a \(held.summary)")
        }
    }

    // MARK: Writes behind

    /// Per change: `HSETNX` of each new decision, one `HSET` of the goals, locations and
    /// segments given, `PEXPIRE` when asked; the batch in one pipeline. A decision another
    /// instance stored first is read back (`HGET`) in a second round trip, only when some are.
    /// A record of another kind (`WRONGTYPE`) is left out; any other error reply throws, so the
    /// batch stays pending: a write refused for now (`OOM`, `READONLY`, `LOADING`, `CLUSTERDOWN`,
    /// …) is never taken for written.
    public func merge(_ changes: [VisitorDataChanges]) async throws -> [[String: String]] {
        do {
            guard !changes.isEmpty else { return [] }
            let ttl = ttlMilliseconds.map(String.init)
            // Written straight into wire form: a batch is hundreds of commands.
            var writer = RESPWriter(keyPrefix: configuration.keyPrefix, capacity: changes.count * 96)
            var json: [UInt8] = []
            /// Per change, the range of its commands; per new decision, where its `HSETNX` is.
            var spans: [Range<Int>] = []
            spans.reserveCapacity(changes.count)
            /// Per change, the range of its bytes (to split the batch per master in a cluster).
            var byteSpans: [Range<Int>] = []
            byteSpans.reserveCapacity(changes.count)
            var decisions: [(change: Int, experience: String, variation: String, reply: Int)] = []
            for (index, change) in changes.enumerated() {
                let key = Self.redisKey(change.key)
                let start = writer.commandCount, byteStart = writer.byteCount
                for (experience, variation) in change.decisions.sorted(by: { $0.key < $1.key }) {
                    decisions.append((index, experience, variation, writer.commandCount))
                    writer.command("HSETNX", arguments: 3)
                    writer.key(key)
                    writer.argument(Self.decisionField(experience))
                    writer.argument(variation)
                }
                let fields = change.goals.count + (change.locations == nil ? 0 : 1) + (change.segmentValues == nil ? 0 : 1)
                if fields > 0 {
                    writer.command("HSET", arguments: 1 + 2 * fields)
                    writer.key(key)
                    for goal in change.goals.sorted() {
                        writer.argument("g:" + goal)
                        writer.argument("1")
                    }
                    if let locations = change.locations {
                        json.removeAll(keepingCapacity: true)
                        VisitorJSON.appendLocations(locations, to: &json)
                        writer.argument("l")
                        writer.argument(bytes: json)
                    }
                    if let segments = change.segmentValues {
                        json.removeAll(keepingCapacity: true)
                        VisitorJSON.append(.object(NonFiniteValues.listing(in: segments)), to: &json)
                        writer.argument("s")
                        writer.argument(bytes: json)
                    }
                }
                if change.renewsExpiry, let ttl, writer.commandCount > start || !change.isEmpty {
                    writer.command("PEXPIRE", arguments: 2)
                    writer.key(key)
                    writer.argument(ttl)
                }
                spans.append(start..<writer.commandCount)
                byteSpans.append(byteStart..<writer.byteCount)
            }
            guard writer.commandCount > 0 else { return Array(repeating: [:], count: changes.count) }
            let replies: [Result<RESPValue, RedisError>]
            switch connection {
            case .node(let client):
                replies = try await client.pipeline(writer.encoded, slow: true)
            case .cluster(let cluster):
                let encoded = writer.encoded
                let entries = changes.indices.filter { !spans[$0].isEmpty }.map { index in
                    (key: configuration.keyPrefix + Self.redisKey(changes[index].key),
                     commands: EncodedCommands(bytes: Array(encoded.bytes[byteSpans[index]]), count: spans[index].count))
                }
                do {
                    replies = try await cluster.pipeline(keyed: entries, slow: true).flatMap { $0 }
                } catch {
                    throw Self.classified(error)
                }
            }
            // A record holding something else (WRONGTYPE) is left out: no retry could write it.
            // Any other error reply (OOM, READONLY, LOADING, CLUSTERDOWN, …) is a write the server
            // refused for now: the batch fails, and the store keeps it and sends it again (every
            // command in it can be sent twice).
            if let refused = replies.lazy.compactMap(Self.refusal).first { throw refused }
            var kept = [[String: String]](repeating: [:], count: changes.count)
            let lost = decisions.filter { (try? replies[$0.reply].get().intValue) == 0 }
            guard !lost.isEmpty else { return kept }
            let stored = try await pipeline(lost.map { .hget(Self.redisKey(changes[$0.change].key), Self.decisionField($0.experience)) })
            if let refused = stored.lazy.compactMap(Self.refusal).first { throw refused }
            for (decision, reply) in zip(lost, stored) {
                guard let value = try? reply.get().stringValue, value != decision.variation else { continue }
                kept[decision.change][decision.experience] = value
            }
            return kept
        } catch {
            throw scoped(error)
        }
    }

    // MARK: Events

    public func subscribe(_ handler: @escaping @Sendable (VisitorDataBackendEvent) -> Void) {
        guard case .node(let client) = connection else {
            // One master's outage is not the backend's, but every slot served again is: the
            // store's pending writes then go at once rather than at its next retry.
            if case .cluster(let cluster) = connection { cluster.subscribeRecovered { handler(.available(downFor: $0)) } }
            return
        }
        client.subscribe { event in
            switch event {
            case .unavailable(let error): handler(.unavailable(reason: error.description))
            case .available(let after): handler(.available(downFor: after))
            case .dataLost: handler(.dataLost)
            }
        }
    }
}
