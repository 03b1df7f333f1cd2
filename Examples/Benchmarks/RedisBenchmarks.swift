import ConvertMemory
import ConvertRedis
import ConvertSharedStore
import ConvertSwiftSDK
import Foundation

extension Benchmarks {
    /// Decisions with visitor data shared through a local Redis: per request, load the visitor,
    /// decide, save (awaited), for new and returning visitors; then visitor saves per second
    /// through the pipelined backend.
    static func decideOnRedis(_ w: Workload, host: String, port: Int) async throws {
        let prefix = "convert-bench:\(getpid()):"
        let redis = RedisClient(configuration: RedisConfiguration(host: host, port: port, keyPrefix: prefix,
                                                                  connectTimeout: .seconds(2), commandTimeout: .seconds(5)))
        defer { redis.close() }
        do {
            try await redis.ping()
        } catch {
            throw BenchError("--store redis needs a Redis server at \(host):\(port) (\(error)); start one with: redis-server --port \(port) --save \"\"")
        }
        let backend = RedisVisitorBackend(client: redis)
        let store = WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore(capacity: max(w.visitors, 1)))
        let sdk = try await decidingSDK(w, store: store)
        let visitors = min(w.visitors, 20_000)
        let ids = (0..<visitors).map { w.visitorPrefix + String($0) }

        func pass() async -> Duration {
            let start = ContinuousClock.now
            for id in ids {
                let context = await sdk.loadContext(visitorId: id, attributes: w.attributes)
                context.setLocationProperties(w.locationProperties)
                _ = context.variation(forExperience: w.experienceKey, enableTracking: false)
                await context.saveVisitorData()
            }
            return ContinuousClock.now - start
        }
        let fresh = await pass()
        // Returning visitors: loaded from Redis, decided from their stored decision, nothing to save.
        let returning = await pass()

        // Saves alone: batches of 256 visitors, one pipeline each.
        let saves = min(50_000, max(1_000, w.visitors * 10))
        let records = (0..<saves).map { n in
            (VisitorKey(namespace: "bench", visitorId: "save-\(n)"),
             VisitorData(bucketing: ["100334665": "1003142551"], goals: ["100215960"], segments: VisitorSegments(browser: "FF")))
        }
        let start = ContinuousClock.now
        for batch in stride(from: 0, to: records.count, by: 256) {
            _ = try await backend.saveAll(Array(records[batch..<min(batch + 256, records.count)]))
        }
        let saveElapsed = ContinuousClock.now - start
        let counters = store.counters
        // Remove what the benchmark wrote.
        let keys = ids.map { RedisVisitorBackend.redisKey(VisitorKey(namespace: "10035569-10034190", visitorId: $0)) }
            + records.map { RedisVisitorBackend.redisKey($0.0) }
        for batch in stride(from: 0, to: keys.count, by: 1_000) {
            _ = try? await redis.del(Array(keys[batch..<min(batch + 1_000, keys.count)]))
        }
        let n = Double(visitors)
        emit(["bench": "decide", "store": "redis", "visitors": .number(n),
              "us_per_request_new": rounded(nanoseconds(fresh) / n / 1000, 1),
              "us_per_request_returning": rounded(nanoseconds(returning) / n / 1000, 1),
              "saves_per_second": rounded(Double(saves) / (nanoseconds(saveElapsed) / 1e9), 0),
              "load_failures": .number(Double(counters.loadFailures)), "save_failures": .number(Double(counters.saveFailures))])
    }
}
