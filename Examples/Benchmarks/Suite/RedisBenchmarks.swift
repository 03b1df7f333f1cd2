import ConvertMemory
import ConvertRedis
import ConvertSharedStore
import ConvertSwiftSDK
import Foundation

extension Benchmarks {
    /// Decisions with visitor data shared through a local Redis, per request as a server makes
    /// them: `loadContext`, then a decision, its writes left behind. Figures comparable with
    /// `redis-benchmark -c 1` (one request at a time, medians): a request for a new visitor
    /// (load + claim: two round trips), for a returning one (load: one), and visitor writes per
    /// second through the pipelined write-behind path beside `redis-benchmark -P 16 -c 1 -t set`.
    ///
    /// The machine drifts, so the comparisons are made in rounds: `redis-benchmark` (when on the
    /// PATH) right before each round of requests, a ratio per round, the median of the ratios.
    ///
    /// `--instances 2` runs the two-instance check instead (see ``decideOnTwoInstances``).
    static func decideOnRedis(_ w: Workload, server: RedisServerAccess, options: [String: String] = [:]) async throws {
        if let instances = options["instances"], instances != "1" {
            guard instances == "2" else { throw BenchError("--instances must be 1 or 2") }
            try await decideOnTwoInstances(w, server: server, options: options)
            return
        }
        let prefix = "convert-bench:\(getpid()):"
        let redis = try await BenchRedis(server, prefix: prefix)
        defer { redis.close() }
        let backend = redis.backend
        let store = WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore(capacity: max(w.visitors, 1)))
        let sdk = try await decidingSDK(w, store: store)
        let visitors = min(w.visitors, 20_000)
        let reference = server.reference
        let rounds = 5

        // This client's own round trip (GET of a short string), as redis-benchmark measures it.
        _ = try await redis.send(["SET", .key("floor"), "x"])
        for _ in 0..<1_000 { _ = try await redis.send(["GET", .key("floor")]) }
        var gets = Samples(capacity: 20_000)
        for _ in 0..<20_000 {
            let start = ContinuousClock.now
            _ = try await redis.send(["GET", .key("floor")])
            gets.add(ContinuousClock.now - start)
        }

        /// One request per visitor of `ids`: load, decide; the write behind is not awaited.
        func pass(_ ids: ArraySlice<String>) async -> Samples {
            var samples = Samples(capacity: ids.count)
            for id in ids {
                let start = ContinuousClock.now
                let context = await sdk.loadContext(visitorId: id, attributes: w.attributes)
                context.setLocationProperties(w.locationProperties)
                _ = context.variation(forExperience: w.experienceKey, enableTracking: false)
                samples.add(ContinuousClock.now - start)
            }
            return samples
        }
        let ids = (0..<visitors).map { w.visitorPrefix + String($0) }
        var fresh = Samples(capacity: visitors), returning = Samples(capacity: visitors)
        var newRatios: [Double] = [], returningRatios: [Double] = [], referenceGets: [Double] = []
        for round in 0..<rounds {
            let slice = ids[(round * visitors / rounds)..<((round + 1) * visitors / rounds)]
            let get = reference?.getP50Microseconds()
            // New visitors: the load finds nothing, the first decision is claimed; segments and
            // locations are written behind, in batches, while the next requests run.
            let new = await pass(slice)
            _ = await store.flush()
            // Returning visitors: loaded, decided from their stored decision, nothing to write.
            let again = await pass(slice)
            fresh.add(new)
            returning.add(again)
            if let get {
                referenceGets.append(get)
                newRatios.append(new.percentile(50) / get)
                returningRatios.append(again.percentile(50) / get)
            }
        }

        // Writes behind alone, in the store's batches (256 visitors, one pipelined round trip
        // each): what follows a new visitor's claimed decision (its segments and locations, one
        // HSET; the claim renewed the time to live), then whole records (a decision set only
        // where none is, a goal, locations, segments, the renewal: three commands).
        let saves = min(100_000, max(1_000, w.visitors * 10))
        func savesPerSecond(_ make: (Int) -> VisitorDataChanges) async throws -> Double {
            let changes = (0..<saves).map(make)
            _ = try await backend.merge(Array(changes.prefix(256)))
            let start = ContinuousClock.now
            for batch in stride(from: 0, to: changes.count, by: 256) {
                _ = try await backend.merge(Array(changes[batch..<min(batch + 256, changes.count)]))
            }
            return Double(saves) / (nanoseconds(ContinuousClock.now - start) / 1e9)
        }
        var afterClaims: [Double] = [], wholeRecords: [Double] = [], sets: [Double] = []
        for round in 0..<3 {
            if let rate = reference?.pipelinedSetsPerSecond() { sets.append(rate) }
            afterClaims.append(try await savesPerSecond { n in
                VisitorDataChanges(key: VisitorKey(namespace: "bench", visitorId: "save-\(round)-\(n)"), locations: ["pricing"],
                                   segmentValues: ["browser": "FF"], renewsExpiry: false)
            })
            wholeRecords.append(try await savesPerSecond { n in
                VisitorDataChanges(key: VisitorKey(namespace: "bench", visitorId: "full-\(round)-\(n)"), all: VisitorData(
                    bucketing: ["100334665": "1003142551"], goals: ["100215960"], segments: VisitorSegments(browser: "FF"),
                    locations: ["pricing"]))
            })
            try await removeKeys(server, prefix: prefix + "visitor:bench:")
        }
        let counters = store.counters
        try await removeKeys(server, prefix: prefix)

        var fields: [String: JSONValue] = [
            "bench": "decide", "store": "redis", "visitors": .number(Double(visitors)), "rounds": .number(Double(rounds)),
            "client_get_us_p50": rounded(gets.percentile(50), 1),
            "request_new_us_p50": rounded(fresh.percentile(50), 1), "request_new_us_p99": rounded(fresh.percentile(99), 1),
            "request_returning_us_p50": rounded(returning.percentile(50), 1),
            "request_returning_us_p99": rounded(returning.percentile(99), 1),
            "saves_per_second": rounded(median(afterClaims), 0), "saves_per_second_whole_records": rounded(median(wholeRecords), 0),
            "claims": .number(Double(counters.claims)), "load_failures": .number(Double(counters.loadFailures)),
            "save_failures": .number(Double(counters.saveFailures)), "claim_failures": .number(Double(counters.claimFailures)),
        ]
        if !referenceGets.isEmpty {
            fields["redis_benchmark_get_us_p50"] = rounded(median(referenceGets), 1)
            fields["new_vs_get_p50"] = rounded(median(newRatios), 2)
            fields["returning_vs_get_p50"] = rounded(median(returningRatios), 2)
        }
        if sets.count == afterClaims.count {
            fields["redis_benchmark_set_p16_per_second"] = rounded(median(sets), 0)
            fields["saves_vs_set_p16"] = rounded(median(zip(afterClaims, sets).map { $0 / $1 }), 2)
            fields["whole_records_vs_set_p16"] = rounded(median(zip(wholeRecords, sets).map { $0 / $1 }), 2)
        }
        emit(fields)
    }

    /// A client of `server` that answered `PING`, or a message saying how to start a server.
    static func connectedClient(_ server: RedisServerAccess, prefix: String, poolSize: Int = 4) async throws -> RedisClient {
        let redis = try server.client(prefix: prefix, poolSize: poolSize)
        do {
            try await redis.ping()
        } catch {
            redis.close()
            throw BenchError("--store redis needs a Redis server at \(server.name) (\(error)); "
                + "start one with: redis-server --port \(server.configuration.port) --save \"\"")
        }
        return redis
    }

    /// Deletes every key under `prefix` (through clients of its own: deleting a few hundred
    /// thousand keys takes longer than a request's bound), on every master of a cluster.
    static func removeKeys(_ server: RedisServerAccess, prefix: String) async throws {
        // One key per DEL: a cluster node refuses a command over keys of several slots.
        let removal = """
            local keys = redis.call('KEYS', ARGV[1] .. '*')
            for _, key in ipairs(keys) do redis.call('DEL', key) end
            return #keys
            """
        var cleaners: [RedisClient] = []
        if server.isCluster {
            let cluster = try server.cluster(prefix: "")
            defer { cluster.close() }
            guard await BenchRedis.mapped(cluster) else { throw BenchError("--redis-cluster: no slot map from \(server.name)") }
            var access = server
            for master in cluster.masters {
                access.configuration.host = master.configuration.host
                access.configuration.port = master.configuration.port
                cleaners.append(try access.client(prefix: "", commandTimeout: .seconds(60)))
            }
        } else {
            cleaners.append(try server.client(prefix: "", commandTimeout: .seconds(60)))
        }
        defer { cleaners.forEach { $0.close() } }
        for cleaner in cleaners { _ = try await cleaner.eval(removal, args: [.string(prefix)]) }
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }
}

/// Durations of single requests, for percentiles (in microseconds).
struct Samples {
    private var values: [Double] = []

    init(capacity: Int) { values.reserveCapacity(capacity) }

    mutating func add(_ duration: Duration) { values.append(nanoseconds(duration) / 1000) }

    mutating func add(_ other: Samples) { values += other.values }

    func percentile(_ p: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p / 100).rounded(.down)))]
    }
}

/// `redis-benchmark` from the PATH, run against the same server for reference figures.
struct RedisBenchmarkTool {
    let path: String
    let host: String
    let port: Int
    /// What reaching the server needs beside the host and port (TLS, credentials).
    let extra: [String]

    init?(host: String, port: Int, extra: [String] = []) {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init) + ["/usr/bin"]
        guard let found = directories.map({ $0 + "/redis-benchmark" }).first(where: { FileManager.default.isExecutableFile(atPath: $0) })
        else { return nil }
        path = found
        self.host = host
        self.port = port
        self.extra = extra
    }

    /// `redis-benchmark -c 1 -n 10000 -t get`: the p50 latency in microseconds.
    func getP50Microseconds() -> Double? {
        field(run(["-c", "1", "-n", "10000", "-t", "get"]), "p50_latency_ms").map { $0 * 1000 }
    }

    /// `redis-benchmark -P 16 -c 1 -n 200000 -t set`: requests per second.
    func pipelinedSetsPerSecond() -> Double? {
        field(run(["-P", "16", "-c", "1", "-n", "200000", "-t", "set"]), "rps")
    }

    private func run(_ arguments: [String]) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["-h", host, "-p", String(port)] + extra + ["--csv"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            return ""
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    /// The value of the CSV column `name` in the last row.
    private func field(_ csv: String, _ name: String) -> Double? {
        let lines = csv.split(separator: "\n").map { $0.split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) } }
        // With --cluster the tool first prints the masters it found.
        guard let header = lines.first(where: { $0.first == "test" }), let row = lines.last, row.count == header.count,
              let column = header.firstIndex(of: name) else { return nil }
        return Double(row[column])
    }
}

/// The benchmark's Redis: one server's client, or a cluster's.
enum BenchRedis {
    case server(RedisClient)
    case cluster(RedisClusterClient)

    /// A client of `server` (a cluster when `--redis-cluster` was given) that answered.
    init(_ server: RedisServerAccess, prefix: String) async throws {
        if server.isCluster {
            let cluster = try server.cluster(prefix: prefix)
            guard await Self.mapped(cluster) else {
                cluster.close()
                throw BenchError("--redis-cluster: no slot map from \(server.name) (is it a cluster node?)")
            }
            self = .cluster(cluster)
        } else {
            self = .server(try await Benchmarks.connectedClient(server, prefix: prefix))
        }
    }

    /// Whether the cluster's slot map was read within 5 s (the client reads it as it starts).
    static func mapped(_ cluster: RedisClusterClient) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(5)
        while cluster.topologyRefreshes == 0 && ContinuousClock.now < deadline {
            if await cluster.refreshTopology() { break }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return cluster.topologyRefreshes > 0
    }

    var backend: RedisVisitorBackend {
        switch self {
        case .server(let client): RedisVisitorBackend(client: client)
        case .cluster(let cluster): RedisVisitorBackend(cluster: cluster)
        }
    }

    func send(_ command: RedisCommand) async throws -> RESPValue {
        switch self {
        case .server(let client): try await client.send(command)
        case .cluster(let cluster): try await cluster.send(command)
        }
    }

    func close() {
        switch self {
        case .server(let client): client.close()
        case .cluster(let cluster): cluster.close()
        }
    }
}
