import ConvertMemory
import ConvertQueue
import ConvertSwiftSDK
import ConvertTesting
import ConvertTransport
import ConvertURLSessionTransport
import ConvertVisitor
import Foundation
import Testing

/// 8 concurrent tasks of mixed calls against a tracking server that fails 30 % of requests and
/// restarts twice. `SOAK_CALLS` sets the calls per task (1,000 in CI; 10,000 for a long run).
@Suite(.serialized) struct SoakTests {
    static var callsPerTask: Int { Int(ProcessInfo.processInfo.environment["SOAK_CALLS"] ?? "") ?? 1000 }

    @Test func mixedLoadLosesNothingAndStaysBounded() async throws {
        let config = try Fixtures.data(.cdnConfigBaseline)
        let delivered = DeliveredEvents()
        let server = try LoopbackHTTPServer { request in
            let roll = Int.random(in: 0..<100)
            if roll < 15 { return .respond(status: 500) }
            if roll < 30 { return .drop }
            delivered.record(request.body)
            return .respond(status: 200)
        }
        let store = MemoryVisitorDataStore(capacity: 500)
        let hub = SystemEventHub()
        let queue = TrackingQueue(
            transport: URLSessionTransport(postAnswerDeadline: .patience),
            endpoint: TrackingEndpoint(template: server.baseURL, sdkKey: "soak", policy: EndpointPolicy(allowsInsecureHTTP: true)),
            options: TrackingQueueOptions(batchSize: 20, releaseInterval: .milliseconds(20), maximumBatchEvents: 50,
                                          capacity: 200_000, retry: RetryPolicy(initial: .milliseconds(5), maximum: .milliseconds(50)),
                                          requestTimeout: .patience),
            events: hub)
        let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "soak", logLevel: .error), ports: ConvertPorts(
            configSource: DirectConfigSource(bytes: config), visitorStore: store, visitorIdStore: MemoryVisitorIdStore(),
            trackingSink: queue, events: hub))
        try await sdk.ready()
        let calls = Self.callsPerTask
        let restarts = Task {
            for _ in 0..<2 {
                try await Task.sleep(for: .milliseconds(300))
                try server.restart()
            }
        }
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for i in 0..<calls {
                        let visitor = "soak-\(task)-\(i % 700)"
                        let context = sdk.createContext(visitorId: visitor, attributes: ["mobile": true])
                        context.setLocationProperties(["location": "pricing"])
                        switch i % 7 {
                        case 0, 1: _ = await context.runExperience("test-experience-ab-fullstack-1")
                        case 2: _ = await context.runFeatures()
                        case 3: await context.trackConversion("button-primary-click", goalData: [GoalDataItem(.amount, 3)])
                        case 4: await context.setDefaultSegments(VisitorSegments(country: i % 2 == 0 ? "US" : "DE"))
                        case 5:
                            let token = await sdk.on(.bucketing) { _ in }
                            await sdk.off(token)
                        default:
                            if task == 0 { await sdk.setTrackingEnabled(i % 14 != 6) }
                            _ = await context.runExperience("test-experience-ab-fullstack-4")
                        }
                    }
                }
            }
        }
        try await restarts.value
        await sdk.setTrackingEnabled(true)
        let deadline = ContinuousClock.now + .patience
        while queue.counters.pending > 0 && ContinuousClock.now < deadline {
            await sdk.flush()
            try await Task.sleep(for: .milliseconds(20))
        }
        let counters = queue.counters
        #expect(counters.pending == 0)
        #expect(counters.enqueued == counters.sent + counters.dropped + counters.pending)
        #expect(counters.dropped == 0)
        #expect(counters.retried > 0, "the failures really happened")
        // The server records only the batches it acknowledges, so each event must arrive exactly once.
        #expect(delivered.total == counters.enqueued, "every enqueued event arrived (\(delivered.total) of \(counters.enqueued))")
        #expect(delivered.unique <= delivered.total)
        #expect(store.count <= 500, "the visitor store stays within its cap")
        #expect(hub.listenerCount == 0)
    }
}

/// Events the server acknowledged: all of them, and the distinct ones (visitors evicted from the
/// bounded store are decided and converted afresh, so repeats are legitimate).
final class DeliveredEvents: @unchecked Sendable {
    private let lock = NSLock()
    private var seen = Set<String>()
    private var count = 0

    func record(_ body: Data) {
        guard let batch = try? JSONDecoder().decode(TrackingBatch.self, from: body) else { return }
        lock.withLock {
            for visitor in batch.visitors {
                for event in visitor.events {
                    count += 1
                    seen.insert("\(visitor.visitorId)|\(event)")
                }
            }
        }
    }

    var unique: Int { lock.withLock { seen.count } }
    var total: Int { lock.withLock { count } }
}
