import ConvertMemory
import ConvertRedis
import ConvertSharedStore
import ConvertSwiftSDK
import ConvertTesting
import Foundation

extension Benchmarks {
    /// Two SDK instances ("two servers") on one Redis: each visitor's first request goes to A,
    /// its second to B right after (`--gap-ms N` between them, 0 by default), for 1,000
    /// visitors (`--visitors`), in each claim mode. B's config has another split
    /// (`--second-config FILE`; by default the workload's config with all of the experience's
    /// traffic on its first variation). Prints per mode the visitors whose bucketing event was
    /// sent twice and those shown two variations.
    static func decideOnTwoInstances(_ w: Workload, server: RedisServerAccess, options: [String: String]) async throws {
        guard !server.isCluster else { throw BenchError("--instances 2 runs on one server; the cluster's two-instance check is a test") }
        let visitors = options["visitors"] == nil ? 1_000 : w.visitors
        let gap = Duration.milliseconds(Int(options["gap-ms"] ?? "0") ?? 0)
        let second: Data
        if let path = options["second-config"] {
            second = try Data(contentsOf: URL(fileURLWithPath: path))
        } else {
            second = try reallocated(w.configData, experienceKey: w.experienceKey)
        }
        for mode in [FirstDecisionClaim.beforeAnswering, .afterAnswering, .never] {
            let prefix = "convert-bench:\(getpid()):\(mode):"
            let redisA = try await connectedClient(server, prefix: prefix)
            let redisB = try await connectedClient(server, prefix: prefix)
            defer {
                redisA.close()
                redisB.close()
            }
            let a = try await TrackedInstance(redisA, config: w.configData, mode: mode)
            let b = try await TrackedInstance(redisB, config: second, mode: mode)
            var split = 0
            var requests = Samples(capacity: 2 * visitors)
            for n in 0..<visitors {
                let id = w.visitorPrefix + String(n)
                let start = ContinuousClock.now
                let first = await a.decide(id, w)
                requests.add(ContinuousClock.now - start)
                if gap > .zero { try await Task.sleep(for: gap) }
                let again = ContinuousClock.now
                let second = await b.decide(id, w)
                requests.add(ContinuousClock.now - again)
                if first != second { split += 1 }
            }
            // Claims made after answering finish in the background; their events come then.
            _ = await a.store.flush()
            _ = await b.store.flush()
            try await Task.sleep(for: .milliseconds(200))
            let bucketing = (a.sink.events + b.sink.events).filter { $0.eventType == "bucketing" }
            let perVisitor = Dictionary(grouping: bucketing, by: \.visitorId).mapValues(\.count)
            let counters = (a.store.counters, b.store.counters)
            try await removeKeys(server, prefix: prefix)
            emit(["bench": "decide", "store": "redis", "instances": 2, "claim": .string("\(mode)"),
                  "visitors": .number(Double(visitors)), "gap_ms": .number(Double(gap.components.seconds * 1000
                      + gap.components.attoseconds / 1_000_000_000_000_000)),
                  "bucketing_events": .number(Double(bucketing.count)),
                  "visitors_bucketed_twice": .number(Double(perVisitor.values.filter { $0 > 1 }.count)),
                  "visitors_shown_two_variations": .number(Double(split)),
                  "request_us_p50": rounded(requests.percentile(50), 1),
                  "claims": .number(Double(counters.0.claims + counters.1.claims)),
                  "claims_lost": .number(Double(counters.0.claimsLost + counters.1.claimsLost)),
                  "claim_failures": .number(Double(counters.0.claimFailures + counters.1.claimFailures))])
        }
    }

    /// `config` with all of `experienceKey`'s traffic on its first variation.
    static func reallocated(_ config: Data, experienceKey: String) throws -> Data {
        guard var root = try JSONSerialization.jsonObject(with: config) as? [String: Any],
              var experiences = root["experiences"] as? [[String: Any]],
              let index = experiences.firstIndex(where: { $0["key"] as? String == experienceKey }),
              var variations = experiences[index]["variations"] as? [[String: Any]], variations.count >= 2
        else { throw BenchError("the workload's experience \(experienceKey) with two variations or more is not in its config") }
        for position in variations.indices { variations[position]["traffic_allocation"] = position == 0 ? 100.0 : 0.0 }
        experiences[index]["variations"] = variations
        root["experiences"] = experiences
        return try JSONSerialization.data(withJSONObject: root)
    }
}

/// One "server" of the two-instance check: an SDK tracking into a recorder, visitor data shared
/// through Redis with the given claim mode.
private struct TrackedInstance {
    let sdk: ConvertSwiftSDK
    let store: WriteBehindVisitorStore
    let sink = RecordingTrackingSink()

    init(_ redis: RedisClient, config: Data, mode: FirstDecisionClaim) async throws {
        store = WriteBehindVisitorStore(backend: RedisVisitorBackend(client: redis), local: MemoryVisitorDataStore(),
                                        options: .init(firstDecisionClaim: mode))
        sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "bench", persistence: .memory), ports: ConvertPorts(
            configSource: DirectConfigSource(bytes: config), visitorStore: store, visitorIdStore: MemoryVisitorIdStore(),
            trackingSink: sink))
        try await sdk.ready()
    }

    /// The variation a request for `visitorId` is answered.
    func decide(_ visitorId: String, _ w: Workload) async -> String {
        let context = await sdk.loadContext(visitorId: visitorId, attributes: w.attributes)
        context.setLocationProperties(w.locationProperties)
        return context.variation(forExperience: w.experienceKey)?.id ?? "none"
    }
}
