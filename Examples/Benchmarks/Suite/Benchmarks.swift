import ConvertFileStorage
import ConvertHashing
import ConvertMemory
import ConvertQueue
import ConvertSwiftSDK
import ConvertSynchronization
import ConvertTesting
import ConvertTransport
import ConvertURLSessionTransport
import Foundation

/// A store that remembers nothing: decisions without storage.
struct ForgetfulStore: VisitorDataStore {
    func data(for key: VisitorKey) -> VisitorData? { nil }
    func update<Result>(_ key: VisitorKey, _ body: (inout VisitorData) -> Result) -> Result {
        var data = VisitorData()
        return body(&data)
    }
    func flush() async -> Int { 0 }
}

/// A transport that answers 200 at once.
struct NoOpTransport: HTTPTransport {
    func send(_ request: HTTPRequest) async throws -> HTTPResponse { HTTPResponse(status: 200) }
}

enum Benchmarks {
    static func decode(_ w: Workload, iterations: Int) throws {
        let bytes = [UInt8](w.configData)
        var experiences = 0
        for _ in 0..<min(50, iterations) { experiences &+= try ConfigDecoder.decode(bytes: bytes).config.experiences.count }
        let start = ContinuousClock.now
        for _ in 0..<iterations { experiences &+= try ConfigDecoder.decode(bytes: bytes).config.experiences.count }
        let elapsed = ContinuousClock.now - start
        precondition(experiences > 0)
        emit(["bench": "decode", "config_bytes": .number(Double(bytes.count)), "iterations": .number(Double(iterations)),
              "us_per_op": rounded(nanoseconds(elapsed) / Double(iterations) / 1000, 2)])
    }

    /// A ready SDK on the workload's config, tracking off, visitors kept in `store`.
    static func decidingSDK(_ w: Workload, store: any VisitorDataStore) async throws -> ConvertSwiftSDK {
        let sdk = ConvertSwiftSDK(
            configuration: ConvertConfiguration(sdkKey: "bench", networkTracking: false, persistence: .memory),
            ports: ConvertPorts(configSource: DirectConfigSource(bytes: w.configData), visitorStore: store,
                                visitorIdStore: MemoryVisitorIdStore(), trackingSink: DiscardingTrackingSink()))
        try await sdk.ready()
        return sdk
    }

    static func decide(_ w: Workload, mode: String, threads: Int) async throws {
        let store: any VisitorDataStore
        var directory: URL?
        switch mode {
        case "persist": store = MemoryVisitorDataStore(capacity: max(w.visitors, 1))
        case "nopersist": store = ForgetfulStore()
        case "file":
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("convert-bench-\(getpid())")
            try? FileManager.default.removeItem(at: directory!)
            store = try FileVisitorDataStore(directory: directory!, capacity: max(w.visitors, 1))
        default: throw BenchError("--mode must be persist, nopersist or file")
        }
        defer { if let directory { try? FileManager.default.removeItem(at: directory) } }
        let sdk = try await decidingSDK(w, store: store)
        // Each thread decides its own share of the visitors, from inputs of its own (a server
        // builds each request's attributes itself), so nothing but the SDK is shared.
        let shares = (0..<threads).map { t in
            Share(ids: stride(from: t, to: w.visitors, by: threads).map { w.visitorPrefix + String($0) },
                  attributes: w.attributes.mapValues { $0.copied }, properties: w.locationProperties.mapValues { $0.copied },
                  experienceKey: String(w.experienceKey.utf8))
        }
        let rssBefore = currentRSSKilobytes()
        let (freshElapsed, counts) = onThreads(shares) { share in
            var counts: [String: Int] = [:]
            for id in share.ids {
                let context = sdk.createContext(visitorId: id, attributes: share.attributes)
                context.setLocationProperties(share.properties)
                let key = context.variation(forExperience: share.experienceKey, enableTracking: false)?.key ?? "none"
                counts[key, default: 0] += 1
            }
            return counts
        }
        let rssAfter = currentRSSKilobytes()
        let (stickyElapsed, _) = onThreads(shares) { share in
            for id in share.ids {
                let context = sdk.createContext(visitorId: id, attributes: share.attributes)
                context.setLocationProperties(share.properties)
                _ = context.variation(forExperience: share.experienceKey, enableTracking: false)
            }
            return [:]
        }
        // The async seed API on the same sticky pass, on one thread, for comparison.
        let asyncStart = ContinuousClock.now
        for id in shares[0].ids {
            let context = sdk.createContext(visitorId: id, attributes: shares[0].attributes)
            context.setLocationProperties(shares[0].properties)
            _ = await context.runExperience(shares[0].experienceKey, enableTracking: false)
        }
        let asyncElapsed = ContinuousClock.now - asyncStart
        let n = Double(max(w.visitors, 1))
        let perThread = Double(max(shares[0].ids.count, 1))
        var merged: [String: Int] = [:]
        for share in counts { merged.merge(share) { $0 + $1 } }
        emit(["bench": "decide", "mode": .string(mode), "visitors": .number(n), "threads": .number(Double(threads)),
              "ns_per_decision": rounded(nanoseconds(freshElapsed) * Double(threads) / n),
              "sticky_ns_per_decision": rounded(nanoseconds(stickyElapsed) * Double(threads) / n),
              "async_sticky_ns_per_decision": rounded(nanoseconds(asyncElapsed) / perThread),
              "decisions_per_second": rounded(n / (nanoseconds(freshElapsed) / 1e9), 0),
              "sticky_decisions_per_second": rounded(n / (nanoseconds(stickyElapsed) / 1e9), 0),
              "variation_counts": .object(merged.mapValues { .number(Double($0)) }),
              "bytes_per_visitor": rounded(Double(max(0, rssAfter - rssBefore)) * 1024 / n),
              "max_rss_kb": .number(Double(maxRSSKilobytes()))])
    }

    /// One thread's work in `decide`.
    struct Share: Sendable {
        let ids: [String]
        let attributes: [String: JSONValue]
        let properties: [String: JSONValue]
        let experienceKey: String
    }

    /// Runs `body` on one thread per share, all started together; the wall time from the start
    /// to the last thread's end, and each thread's result.
    static func onThreads(_ shares: [Share], _ body: @escaping @Sendable (Share) -> [String: Int]) -> (Duration, [[String: Int]]) {
        let results = Locked<[[String: Int]]>([])
        let start = DispatchSemaphore(value: 0), finished = DispatchSemaphore(value: 0)
        for share in shares {
            let thread = Thread {
                start.wait()
                let result = body(share)
                results.withValue { $0.append(result) }
                finished.signal()
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        let began = ContinuousClock.now
        for _ in shares { start.signal() }
        for _ in shares { finished.wait() }
        return (ContinuousClock.now - began, results.value)
    }

    static func features(_ w: Workload, iterations: Int) async throws {
        let sdk = ConvertSwiftSDK(configData: w.configData,
                                  configuration: ConvertConfiguration(sdkKey: "", networkTracking: false, persistence: .memory),
                                  logSink: SilentLogSink())
        try await sdk.ready()
        let context = sdk.createContext(visitorId: w.visitorPrefix + "features", attributes: w.attributes)
        context.setLocationProperties(w.locationProperties)
        var enabled = 0
        for _ in 0..<min(1_000, iterations) {
            enabled &+= context.features().count
            enabled &+= await context.runFeatures().count
        }
        // Alternating halves, so neither call gains from running second on a warmer machine.
        var elapsed = Duration.zero, asyncElapsed = Duration.zero
        for _ in 0..<2 {
            var start = ContinuousClock.now
            for _ in 0..<iterations / 2 { enabled &+= context.features().count }
            elapsed += ContinuousClock.now - start
            start = ContinuousClock.now
            for _ in 0..<iterations / 2 { enabled &+= await context.runFeatures().count }
            asyncElapsed += ContinuousClock.now - start
        }
        precondition(enabled > 0)
        let calls = Double(max(1, iterations / 2 * 2))
        emit(["bench": "features", "iterations": .number(calls),
              "ns_per_call": rounded(nanoseconds(elapsed) / calls),
              "async_ns_per_call": rounded(nanoseconds(asyncElapsed) / calls)])
    }

    static func hash(_ w: Workload) {
        let strings = (0..<w.hashStrings).map { w.experienceId + w.visitorPrefix + String($0) }
        let bytes = strings.reduce(0) { $0 + $1.utf8.count }
        var sink: UInt32 = 0
        let start = ContinuousClock.now
        for s in strings { sink ^= MurmurHash3.hash32(s) }
        let elapsed = ContinuousClock.now - start
        precondition(sink != 1 || true)
        let ns = nanoseconds(elapsed)
        emit(["bench": "hash", "strings": .number(Double(strings.count)), "checksum": .number(Double(sink)),
              "ns_per_hash_string": rounded(ns / Double(strings.count), 2),
              "mb_per_s_string": rounded(Double(bytes) / (ns / 1e9) / 1e6)])
    }

    static func track(_ w: Workload) async throws {
        let n = w.visitors
        let events = (0..<n).map { i in
            TrackingEvent(accountId: "10035569", projectId: "10034190", visitorId: w.visitorPrefix + String(i % 1000), segments: nil,
                          payload: .bucketing(experienceId: w.experienceId, variationId: "1003142550"))
        }
        let idle = TrackingQueue(transport: NoOpTransport(), endpoint: TrackingEndpoint(template: "https://bench.invalid", sdkKey: "b"),
                                 options: TrackingQueueOptions(batchSize: 1_000_000, releaseInterval: .seconds(3600),
                                                               capacity: n + 1))
        let start = ContinuousClock.now
        for event in events { idle.enqueue(event) }
        let enqueueElapsed = ContinuousClock.now - start
        idle.stop()

        let server = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let queue = TrackingQueue(
            transport: URLSessionTransport(),
            endpoint: TrackingEndpoint(template: server.baseURL, sdkKey: "b", policy: EndpointPolicy(allowsInsecureHTTP: true)),
            options: TrackingQueueOptions(batchSize: 500, releaseInterval: .milliseconds(5), maximumBatchEvents: 500, capacity: n + 1))
        let deliveryStart = ContinuousClock.now
        for event in events { queue.enqueue(event) }
        while queue.counters.sent < n {
            await queue.flush()
            if queue.counters.sent < n { try await Task.sleep(for: .milliseconds(1)) }
        }
        let deliveryElapsed = ContinuousClock.now - deliveryStart
        emit(["bench": "track", "events": .number(Double(n)),
              "ns_per_enqueue": rounded(nanoseconds(enqueueElapsed) / Double(n)),
              "events_per_s_delivered": rounded(Double(n) / (nanoseconds(deliveryElapsed) / 1e9), 0),
              "requests": .number(Double(server.requests.count))])
    }

    static func ready(_ w: Workload, runs: Int) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("convert-bench-ready-\(getpid())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try LoopbackHTTPServer { _ in .delay(.seconds(5), then: .respond(status: 503)) }
        var configuration = ConvertConfiguration(sdkKey: "bench-key", apiConfigEndpoint: server.baseURL,
                                                 logLevel: .silent, persistence: .file, storageDirectory: directory,
                                                 allowsInsecureHTTP: true)
        configuration.networkTracking = false
        try FileByteStore(directory: directory).write(w.configData, to: "config-bench-key-default.json")
        var samples: [Double] = []
        for _ in 0..<runs {
            let start = ContinuousClock.now
            let sdk = ConvertSwiftSDK(configuration: configuration, logSink: SilentLogSink())
            try await sdk.ready(timeout: .seconds(5))
            samples.append(nanoseconds(ContinuousClock.now - start) / 1e6)
        }
        samples.sort()
        emit(["bench": "ready", "runs": .number(Double(runs)), "ms": rounded(samples[samples.count / 2], 3),
              "min_ms": rounded(samples.first!, 3), "max_ms": rounded(samples.last!, 3)])
    }
}

extension Benchmarks {
    /// Splits a sticky decision's cost into its parts, for profiling: context creation, location
    /// properties, `runExperience` on built contexts (`--iterations` passes), a store lookup.
    static func breakdown(_ w: Workload, repeats: Int) async throws {
        let store = MemoryVisitorDataStore(capacity: max(w.visitors, 1))
        let sdk = try await decidingSDK(w, store: store)
        let ids = (0..<w.visitors).map { w.visitorPrefix + String($0) }
        for id in ids {
            let context = sdk.createContext(visitorId: id, attributes: w.attributes)
            context.setLocationProperties(w.locationProperties)
            _ = await context.runExperience(w.experienceKey, enableTracking: false)
        }
        var t = ContinuousClock.now
        for id in ids { _ = sdk.createContext(visitorId: id, attributes: w.attributes) }
        let create = ContinuousClock.now - t
        t = ContinuousClock.now
        for id in ids { sdk.createContext(visitorId: id, attributes: w.attributes).setLocationProperties(w.locationProperties) }
        let createSet = ContinuousClock.now - t
        t = ContinuousClock.now
        for id in ids {
            let context = sdk.createContext(visitorId: id, attributes: w.attributes)
            context.setLocationProperties(w.locationProperties)
            _ = await context.runExperience(w.experienceKey, enableTracking: false)
        }
        let full = ContinuousClock.now - t
        let contexts = ids.map { id in
            let context = sdk.createContext(visitorId: id, attributes: w.attributes)
            context.setLocationProperties(w.locationProperties)
            return context
        }
        t = ContinuousClock.now
        for _ in 0..<repeats {
            for context in contexts { _ = await context.runExperience(w.experienceKey, enableTracking: false) }
        }
        let run = (ContinuousClock.now - t) / repeats
        guard let config = sdk.config else { throw BenchError("the SDK has no config after ready()") }
        let keys = ids.map { VisitorKey(accountId: config.accountId, projectId: config.project.id, visitorId: $0) }
        t = ContinuousClock.now
        var found = 0
        for key in keys where store.data(for: key) != nil { found += 1 }
        let lookup = ContinuousClock.now - t
        let n = Double(ids.count)
        func ns(_ d: Duration) -> JSONValue { rounded(nanoseconds(d) / n) }
        emit(["bench": "breakdown", "visitors": .number(n), "create_context_ns": ns(create),
              "create_and_set_properties_ns": ns(createSet), "whole_sticky_decision_ns": ns(full),
              "run_on_built_context_ns": ns(run), "store_lookup_ns": ns(lookup),
              "found": .number(Double(found))])
    }
}

extension JSONValue {
    /// The same value in storage of its own (a thread's own copy of shared input).
    var copied: JSONValue {
        switch self {
        case .string(let text): return .string(String(decoding: Array(text.utf8), as: UTF8.self))
        case .array(let elements): return .array(elements.map(\.copied))
        case .object(let fields): return .object(fields.mapValues(\.copied))
        default: return self
        }
    }
}
