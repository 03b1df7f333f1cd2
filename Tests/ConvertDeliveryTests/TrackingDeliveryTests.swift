import ConvertFileStorage
import ConvertMemory
import ConvertQueue
import ConvertSwiftSDK
import ConvertTesting
import ConvertTransport
import ConvertURLSessionTransport
import ConvertVisitor
import Foundation
import Testing

@Suite(.serialized) struct TrackingDeliveryTests {
    @Test func trackingBodyMatchesTheWireFormatFieldByField() async throws {
        let config = try Fixtures.data(.cdnConfigBaseline)
        let server = try LoopbackHTTPServer { request in
            request.method == "GET" ? configReply(config) : .respond(status: 200)
        }
        var configuration = loopbackConfiguration(server, persistence: .memory)
        configuration.eventsBatchSize = 4
        configuration.eventsReleaseIntervalMs = 60_000
        let sdk = ConvertSwiftSDK(configuration: configuration, logSink: RecordingLogSink())
        let recorder = await EventRecorder(sdk, events: [.apiQueueReleased])
        try await sdk.ready(timeout: .patience)
        let alice = sdk.createContext(visitorId: "alice", attributes: ["desktop": "true", "browser": "FF"])
        alice.setLocationProperties(["location": "pricing"])
        await alice.setDefaultSegments(VisitorSegments(country: "US", customSegments: ["10033690"]))
        let variation = try #require(await alice.runExperience("test-experience-ab-fullstack-1"))
        let bob = sdk.createContext(visitorId: "bob")
        await bob.trackConversion("decrease-bounce-rate")
        await alice.trackConversion("button-primary-click", goalData: [GoalDataItem(.amount, 10.5), GoalDataItem(.transactionId, "T-9")])
        guard case .apiQueueReleased(let released) = try await recorder.wait(for: .apiQueueReleased)[0] else { throw CancellationError() }
        #expect(released.eventCount == 4)
        try await eventually("counters") { sdk.trackingCounters.sent == 4 }
        #expect(sdk.trackingCounters.enqueued == 4)
        #expect(sdk.trackingCounters.pending == 0)

        let post = try #require(server.requests.first { $0.method == "POST" })
        #expect(post.path == "/10034190/v1/track/10035569/10034190")
        #expect(post.header("Content-Type") == "application/json")
        #expect(post.header("User-Agent") == "ConvertAgent/\(ConvertAgent.version)")
        let body = try ReceivedBatch(post.body)
        #expect(Set(body.raw.keys) == ["enrichData", "accountId", "projectId", "visitors", "source"])
        #expect(body.raw["enrichData"] as? Bool == true)
        #expect(body.raw["accountId"] as? String == "10035569")
        #expect(body.raw["projectId"] as? String == "10034190")
        #expect(body.raw["source"] as? String == "ios-sdk")
        #expect(body.visitors.map { $0["visitorId"] as? String } == ["alice", "bob"], "visitors in first-seen order")
        let segments = try #require(body.visitors[0]["segments"] as? [String: Any])
        #expect(segments["country"] as? String == "US")
        #expect(segments["customSegments"] as? [String] == ["10033690"])
        #expect(body.visitors[1]["segments"] == nil)
        let events = body.events
        #expect(events.map(\.type) == ["bucketing", "conversion", "conversion", "conversion"])
        #expect(events.map(\.visitor) == ["alice", "alice", "alice", "bob"])
        #expect(events[0].data as? [String: String] == ["experienceId": "100334665", "variationId": variation.id])
        #expect(events[1].data["goalId"] as? String == "100322784")
        #expect(events[1].data["bucketingData"] as? [String: String] == ["100334665": variation.id])
        #expect(events[1].data["goalData"] == nil)
        let goalData = try #require(events[2].data["goalData"] as? [[String: Any]])
        #expect(goalData.map { $0["key"] as? String } == ["amount", "transactionId"])
        #expect(goalData[0]["value"] as? Double == 10.5)
        #expect(goalData[1]["value"] as? String == "T-9")
        #expect(Set(events[3].data.keys) == ["goalId"], "no bucketingData when the visitor has no decisions")
    }

    @Test func directDataWithoutAnSDKKeyTracksToTheAccountAndProjectPath() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 200) }
        var configuration = loopbackConfiguration(server, sdkKey: "", persistence: .memory)
        configuration.eventsBatchSize = 1
        let sdk = ConvertSwiftSDK(configData: try Fixtures.data(.cdnConfigBaseline), configuration: configuration,
                                  logSink: RecordingLogSink())
        try await sdk.ready(timeout: .patience)
        let context = sdk.createContext(visitorId: "direct", attributes: ["desktop": "true", "browser": "FF"])
        context.setLocationProperties(["location": "pricing"])
        let variation = try #require(await context.runExperience("test-experience-ab-fullstack-1"))
        try await eventually("delivered") { sdk.trackingCounters.sent == 1 }
        let post = try #require(server.requests.first { $0.method == "POST" })
        // As the JavaScript SDK does: "{account_id}/{project_id}" of the data stands in for the key.
        #expect(post.path == "/10034190/v1/track/10035569/10034190")
        let events = try ReceivedBatch(post.body).events
        #expect(events.map(\.type) == ["bucketing"])
        #expect(events.first?.data as? [String: String] == ["experienceId": "100334665", "variationId": variation.id])
        #expect(server.requests.allSatisfy { $0.method == "POST" }, "direct data fetches no config")
    }

    @Test func faultInjectionLosesNothingAndKeepsOrderPerVisitor() async throws {
        let delivered = Delivered()
        let server = try LoopbackHTTPServer { request in
            let roll = Int.random(in: 0..<100)
            if roll < 15 { return .respond(status: 500) }
            if roll < 25 { return .drop }
            if roll < 30 {
                delivered.record(request.body, unknownFate: true)
                return .drop
            }
            delivered.record(request.body, unknownFate: false)
            return .respond(status: 200)
        }
        let queue = TrackingQueue(
            transport: URLSessionTransport(postAnswerDeadline: .patience),
            endpoint: TrackingEndpoint(template: server.baseURL + "/[project_id]/v1", sdkKey: "k",
                                       policy: EndpointPolicy(allowsInsecureHTTP: true)),
            options: TrackingQueueOptions(batchSize: 10, releaseInterval: .milliseconds(20), maximumBatchEvents: 10,
                                          retry: RetryPolicy(initial: .milliseconds(5), maximum: .milliseconds(40)),
                                          requestTimeout: .patience))
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<4 {
                group.addTask {
                    for n in 0..<250 {
                        queue.enqueue(TrackingEvent(accountId: "1", projectId: "2", visitorId: "visitor-\(task)-\(n % 5)",
                                                    segments: nil,
                                                    payload: .conversion(goalId: "\(task)-\(n)", goalData: nil, bucketingData: nil)))
                        if n % 50 == 0 { await Task.yield() }
                    }
                }
            }
        }
        try await eventually("every event acknowledged", timeout: .patience) { queue.counters.pending == 0 }
        let counters = queue.counters
        #expect(counters.enqueued == 1000)
        #expect(counters.sent == 1000)
        #expect(counters.enqueued == counters.sent + counters.dropped + counters.pending)
        #expect(counters.retried > 0, "the faults really happened")
        let goals = delivered.goals
        #expect(Set(goals.map(\.goal)).count == 1000, "every event arrived")
        let duplicates = Dictionary(grouping: goals, by: \.goal).filter { $0.value.count > 1 }
        for (goal, copies) in duplicates {
            let acknowledgedCopies = copies.filter { !$0.unknownFate }.count
            #expect(acknowledgedCopies <= 1, "duplicate \(goal) only after an unknown fate")
        }
        for (visitor, sequence) in delivered.firstDeliveryOrder {
            let numbers = sequence.map { Int($0.split(separator: "-")[1])! }
            #expect(numbers == numbers.sorted(), "order kept for \(visitor)")
        }
    }

    @Test func journaledEventsSurviveSIGKILL() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let probe = try #require(BuiltProducts.executable("JournalProbe"), "the JournalProbe helper is built with the tests")
        let process = Process()
        process.executableURL = probe
        process.arguments = [directory.path, "100000"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var acknowledged = -1
        var buffer = Data()
        while acknowledged < 400 {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            buffer.append(chunk)
            let lines = String(decoding: buffer, as: UTF8.self).split(separator: "\n")
            if let last = lines.last(where: { $0.hasPrefix("ack ") }), let n = Int(last.dropFirst(4)) { acknowledged = n }
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)
        let text = String(decoding: buffer + output.fileHandleForReading.availableData, as: UTF8.self)
        let acked = text.split(separator: "\n").compactMap { $0.hasPrefix("ack ") ? Int($0.dropFirst(4)) : nil }
        #expect(acked.count >= 400)
        #expect(!text.contains("done"), "killed mid-stream")

        let delivered = Delivered()
        let server = try LoopbackHTTPServer { request in
            delivered.record(request.body, unknownFate: false)
            return .respond(status: 200)
        }
        let journal = try FileEventJournal(directory: directory)
        let queue = TrackingQueue(
            transport: URLSessionTransport(),
            endpoint: TrackingEndpoint(template: server.baseURL + "/v1", sdkKey: "k", policy: EndpointPolicy(allowsInsecureHTTP: true)),
            options: TrackingQueueOptions(batchSize: 100, releaseInterval: .milliseconds(10)), journal: journal)
        try await eventually("recovered events delivered", timeout: .patience) { queue.counters.pending == 0 }
        let goals = Set(delivered.goals.map(\.goal))
        let missing = acked.filter { !goals.contains("goal-\($0)") }
        #expect(missing.isEmpty, "acknowledged but lost: \(missing.prefix(10))")
        #expect(try journal.pending().isEmpty)
        #expect(FileStorage.permissions(of: directory.appendingPathComponent("events.journal")) == 0o600)
    }

    @Test func journaledEventsAreDeliveredFirstOnStart() async throws {
        let journal = MemoryEventJournal()
        for n in 0..<3 {
            _ = try journal.append(try JSONEncoder().encode(TrackingEvent(
                accountId: "1", projectId: "2", visitorId: "old", segments: nil,
                payload: .conversion(goalId: "old-\(n)", goalData: nil, bucketingData: nil))))
        }
        let delivered = Delivered()
        let server = try LoopbackHTTPServer { request in
            delivered.record(request.body, unknownFate: false)
            return .respond(status: 200)
        }
        let queue = TrackingQueue(
            transport: URLSessionTransport(),
            endpoint: TrackingEndpoint(template: server.baseURL, sdkKey: "k", policy: EndpointPolicy(allowsInsecureHTTP: true)),
            options: TrackingQueueOptions(batchSize: 50, releaseInterval: .milliseconds(30)), journal: journal)
        queue.enqueue(TrackingEvent(accountId: "1", projectId: "2", visitorId: "new", segments: nil,
                                    payload: .bucketing(experienceId: "e", variationId: "v")))
        try await eventually("delivery") { queue.counters.pending == 0 }
        #expect(delivered.goals.map(\.goal) == ["old-0", "old-1", "old-2"])
        #expect(delivered.visitorsInOrder == ["old", "new"])
        #expect(try journal.pending().isEmpty)
    }

    @Test func boundedQueueDropsNewEventsAndCountsThem() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 500) }
        let logs = RecordingLogSink()
        let queue = TrackingQueue(
            transport: URLSessionTransport(),
            endpoint: TrackingEndpoint(template: server.baseURL, sdkKey: "k", policy: EndpointPolicy(allowsInsecureHTTP: true)),
            options: TrackingQueueOptions(batchSize: 5, releaseInterval: .milliseconds(5), capacity: 20,
                                          retry: RetryPolicy(initial: .milliseconds(5), maximum: .milliseconds(10))),
            log: SDKLog(sink: logs, minimum: .debug))
        for n in 0..<50 {
            queue.enqueue(TrackingEvent(accountId: "1", projectId: "2", visitorId: "v", segments: nil,
                                        payload: .bucketing(experienceId: "e\(n)", variationId: "x")))
        }
        let counters = queue.counters
        #expect(counters.dropped == 30)
        #expect(counters.pending == 20)
        #expect(counters.enqueued == counters.sent + counters.dropped + counters.rejected + counters.pending)
        #expect(logs.contains("tracking queue full (20): 1 event(s) dropped"))
        #expect(logs.messages.filter { $0.contains("tracking queue full") }.count == 1, "drops are logged at most every 10 s")
        #expect(await queue.flush(timeout: .milliseconds(300)) == false, "nothing was acknowledged")
        #expect(queue.counters.sent == 0)
        #expect(queue.counters.pending == 20, "failed deliveries keep their events")
        queue.stop()
    }

    @Test func flushDeliversAtOnceAndEventsEnqueuedInFlightAreKept() async throws {
        let gate = DispatchSemaphore(value: 0)
        let delivered = Delivered()
        let server = try LoopbackHTTPServer { request in
            if delivered.goals.isEmpty { gate.wait() }
            delivered.record(request.body, unknownFate: false)
            return .respond(status: 200)
        }
        let queue = TrackingQueue(
            transport: URLSessionTransport(),
            endpoint: TrackingEndpoint(template: server.baseURL, sdkKey: "k", policy: EndpointPolicy(allowsInsecureHTTP: true)),
            options: TrackingQueueOptions(batchSize: 1000, releaseInterval: .seconds(3600)))
        func event(_ n: Int) -> TrackingEvent {
            TrackingEvent(accountId: "1", projectId: "2", visitorId: "v", segments: nil,
                          payload: .conversion(goalId: "g\(n)", goalData: nil, bucketingData: nil))
        }
        queue.enqueue(event(0))
        async let first: Void = queue.flush()
        try await eventually("the first request in flight") { server.requests.count == 1 }
        queue.enqueue(event(1))
        queue.enqueue(event(2))
        gate.signal()
        await first
        await queue.flush()
        #expect(delivered.goals.map(\.goal) == ["g0", "g1", "g2"])
        #expect(queue.counters.sent == 3)
    }

}

/// What a fake tracking server accepted.
final class Delivered: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [(visitor: String, goal: String, unknownFate: Bool)] = []
    private var visitors: [String] = []

    func record(_ body: Data, unknownFate: Bool) {
        guard let batch = try? ReceivedBatch(body) else { return }
        lock.withLock {
            for event in batch.events {
                if !visitors.contains(event.visitor) { visitors.append(event.visitor) }
                if let goal = event.data["goalId"] as? String {
                    entries.append((event.visitor, goal, unknownFate))
                }
            }
        }
    }

    var goals: [(visitor: String, goal: String, unknownFate: Bool)] { lock.withLock { entries } }
    var visitorsInOrder: [String] { lock.withLock { visitors } }

    /// Per visitor, goals in the order they first arrived.
    var firstDeliveryOrder: [String: [String]] {
        var seen = Set<String>()
        var out: [String: [String]] = [:]
        for entry in goals where seen.insert(entry.goal).inserted {
            out[entry.visitor, default: []].append(entry.goal)
        }
        return out
    }
}
