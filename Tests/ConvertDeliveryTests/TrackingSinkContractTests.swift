import ConvertMemory
import ConvertQueue
import ConvertSwiftSDK
import ConvertTesting
import ConvertTransport
import ConvertSynchronization
import Foundation
import Testing

private let endpoint = TrackingEndpoint(template: "https://track.example/[project_id]/v1", sdkKey: "k")

/// The events a tracking request carried, rebuilt from its body by the SDK's own wire type.
private func events(in request: HTTPRequest) -> [TrackingEvent] {
    guard let body = request.body, let batch = try? JSONDecoder().decode(TrackingBatch.self, from: body) else { return [] }
    return batch.visitors.flatMap { visitor in
        visitor.events.map { TrackingEvent(accountId: batch.accountId, projectId: batch.projectId, visitorId: visitor.visitorId,
                                           segments: visitor.segments, payload: $0) }
    }
}

@Suite struct TrackingSinkContractTests {
    @Test func theQueueOverHTTPKeepsTheSinkContract() async throws {
        try await TrackingSinkContract.verify {
            let transport = StubTransport { _ in HTTPResponse(status: 200) }
            let queue = TrackingQueue(transport: transport, endpoint: endpoint, options: TrackingQueueOptions(batchSize: 7))
            return .init(sink: queue, delivered: { transport.requests.flatMap(events(in:)) })
        }
    }

    @Test func theQueueOverAnotherDeliveryKeepsTheSinkContract() async throws {
        try await TrackingSinkContract.verify {
            let delivery = RecordingTrackingDelivery()
            return .init(sink: TrackingQueue(delivery: delivery, options: TrackingQueueOptions(batchSize: 5)),
                         delivered: { delivery.delivered })
        }
        try await TrackingSinkContract.verify {
            let delivery = RecordingTrackingDelivery()
            return .init(sink: TrackingQueue(delivery: delivery, journal: MemoryEventJournal()), delivered: { delivery.delivered })
        }
    }

    @Test func theRecordingSinkKeepsTheSinkContract() async throws {
        try await TrackingSinkContract.verify {
            let sink = RecordingTrackingSink()
            return .init(sink: sink, delivered: { sink.events })
        }
    }

    @Test func aSinkThatTakesEventsAfterShutdownIsCaught() async throws {
        // The port's default shutdown flushes once and keeps taking events: the contract names it.
        final class Careless: TrackingSink, Sendable {
            let recorded = Locked<[TrackingEvent]>([])
            func enqueue(_ event: TrackingEvent) { recorded.withValue { $0.append(event) } }
            func flush() async {}
        }
        let violation = await #expect(throws: ContractViolation.self) {
            try await TrackingSinkContract.verify {
                let sink = Careless()
                return .init(sink: sink, delivered: { sink.recorded.value })
            }
        }
        #expect(violation?.description.contains("offer after shutdown") == true, "\(String(describing: violation))")
    }

    @Test func aSinkThatLosesEventsIsCaught() async throws {
        // Takes every event, delivers only every other one.
        let violation = await #expect(throws: ContractViolation.self) {
            try await TrackingSinkContract.verify {
                let sink = RecordingTrackingSink()
                return .init(sink: sink, delivered: { sink.events.enumerated().filter { $0.offset % 2 == 0 }.map(\.element) })
            }
        }
        #expect(violation?.description.contains("never reached the receiver") == true, "\(String(describing: violation))")
    }
}

private func event(_ visitor: String, _ goal: String) -> TrackingEvent {
    TrackingEvent(accountId: "1", projectId: "2", visitorId: visitor, segments: nil,
                  payload: .conversion(goalId: goal, goalData: nil, bucketingData: nil))
}

private func goals(_ events: [TrackingEvent]) -> [String] {
    events.map { event in
        if case .conversion(let goalId, _, _) = event.payload { return goalId }
        return ""
    }
}

/// The queue consumes only transport-neutral answers: a delivery with no HTTP in it gets the
/// same batching, retries, splitting, refusal judging and journal.
@Suite struct NeutralDeliveryTests {
    @Test func httpAnswersAreClassifiedAsSpecSevenSays() {
        for status in [200, 201, 204, 299] {
            #expect(HTTPTrackingDelivery.answer(for: HTTPResponse(status: status)) == .delivered, "\(status)")
        }
        for status in [408, 429, 500, 502, 503, 599] {
            #expect(HTTPTrackingDelivery.answer(for: HTTPResponse(status: status))
                    == .retryLater(after: nil, reason: "answered HTTP \(status)"), "\(status)")
        }
        #expect(HTTPTrackingDelivery.answer(for: HTTPResponse(status: 429, headers: ["Retry-After": "30"]))
                == .retryLater(after: .seconds(30), reason: "answered HTTP 429"))
        for status in [100, 302, 304, 400, 401, 403, 404, 413, 422] {
            #expect(HTTPTrackingDelivery.answer(for: HTTPResponse(status: status)) == .refused(reason: "HTTP \(status)"), "\(status)")
        }
    }

    @Test func theHTTPDeliveryBuildsTheRequestAndRefusesWhatCannotBeSent() async throws {
        let transport = StubTransport { _ in HTTPResponse(status: 503, headers: ["Retry-After": "7"]) }
        let delivery = HTTPTrackingDelivery(transport: transport, endpoint: endpoint,
                                            options: TrackingQueueOptions(requestTimeout: .seconds(3), maximumBatchBytes: 1_024))
        #expect(await delivery.deliver([event("v", "g")]) == .retryLater(after: .seconds(7), reason: "answered HTTP 503"))
        let request = try #require(transport.requests.first)
        #expect(request.method == .post && request.url.absoluteString == "https://track.example/2/v1/track/k")
        #expect(request.header("User-Agent") == ConvertAgent.userAgent && request.timeout == .seconds(3))
        #expect(goals(events(in: request)) == ["g"])

        let whale = event("v", String(repeating: "w", count: 2_000))
        guard case .tooLarge(let reason) = await delivery.deliver([whale]) else {
            Issue.record("an event over the byte bound must answer tooLarge")
            return
        }
        #expect(reason.hasPrefix("a tracking event of ") && reason.hasSuffix("is over the 1024-byte request limit"), "\(reason)")
        let stray = TrackingEvent(accountId: "1", projectId: "not/an/id", visitorId: "v", segments: nil,
                                  payload: .conversion(goalId: "g", goalData: nil, bucketingData: nil))
        guard case .undeliverable = await delivery.deliver([stray]) else {
            Issue.record("an event whose project is no id must be undeliverable")
            return
        }
        #expect(transport.requests.count == 1, "nothing over the bound or unaddressable goes on the wire")
    }

    @Test func aNeutralDeliveryGetsRetriesOnTheInjectedClock() async throws {
        let clock = ManualClock()
        let answers = Locked(0)
        let delivery = RecordingTrackingDelivery { _ in
            answers.withValue { $0 += 1 }
            return answers.value == 1 ? .retryLater(after: .seconds(45), reason: "failed: broker away") : .delivered
        }
        let logs = RecordingLogSink()
        let queue = TrackingQueue(delivery: delivery,
                                  options: TrackingQueueOptions(batchSize: 2, retry: RetryPolicy(initial: .seconds(1), maximum: .seconds(60))),
                                  log: SDKLog(sink: logs, minimum: .debug), clock: clock)
        defer { queue.stop() }
        queue.enqueue(event("v", "g0"))
        queue.enqueue(event("v", "g1"))
        try await eventually("the failed attempt") { queue.counters.failedRequests == 1 }
        try await clock.waitForSleepers()
        #expect(clock.deadlines == [.seconds(45)], "the receiver's wait outweighs the 1 s backoff")
        #expect(logs.messages.contains("tracking delivery failed: broker away; 2 event(s) will be retried"), "\(logs.messages)")
        clock.advance(by: .seconds(45))
        try await eventually("the retry") { queue.counters.sent == 2 }
        #expect(delivery.batches.map(goals) == [["g0", "g1"], ["g0", "g1"]], "the same batch, as it was")
    }

    @Test func aNeutralDeliveryGetsSplittingRefusalJudgingAndDrops() async throws {
        let journal = MemoryEventJournal()
        let delivery = RecordingTrackingDelivery { events in
            if events.count > 4 { return .tooLarge(reason: "\(events.count) events is over the broker's limit") }
            if events.contains(where: { $0.visitorId == "bad" }) { return .refused(reason: "schema mismatch") }
            if events.contains(where: { $0.visitorId == "huge" }) { return .tooLarge(reason: "a tracking event of 9 MB is too large") }
            if events.contains(where: { $0.visitorId == "lost" }) {
                return events.count == 1 ? .undeliverable(reason: "no topic") : .tooLarge(reason: "one at a time")
            }
            return .delivered
        }
        let logs = RecordingLogSink()
        let queue = TrackingQueue(delivery: delivery, options: TrackingQueueOptions(batchSize: 8), journal: journal,
                                  log: SDKLog(sink: logs, minimum: .debug))
        defer { queue.stop() }
        let good = (0..<12).map { event("v\($0 % 3)", "g\($0)") }
        for (n, event) in good.enumerated() {
            queue.enqueue(event)
            if n == 3 { queue.enqueue(TrackingEvent(accountId: "1", projectId: "2", visitorId: "bad", segments: nil,
                                                    payload: .conversion(goalId: "b", goalData: nil, bucketingData: nil))) }
            if n == 6 { queue.enqueue(TrackingEvent(accountId: "1", projectId: "2", visitorId: "huge", segments: nil,
                                                    payload: .conversion(goalId: "h", goalData: nil, bucketingData: nil))) }
            if n == 9 { queue.enqueue(TrackingEvent(accountId: "1", projectId: "2", visitorId: "lost", segments: nil,
                                                    payload: .conversion(goalId: "l", goalData: nil, bucketingData: nil))) }
        }
        #expect(await queue.flush(timeout: .patience))
        #expect(Set(goals(delivery.delivered)) == Set(goals(good)), "every good event delivered, none lost behind the bad ones")
        // A backlog goes out in requests of up to `maximumBatchEvents`.
        #expect(delivery.batches.allSatisfy { $0.count <= TrackingQueueOptions().maximumBatchEvents })
        let counters = queue.counters
        #expect(counters.sent == 12 && counters.rejected == 1 && counters.dropped == 2 && counters.pending == 0, "\(counters)")
        #expect(try journal.pending().isEmpty, "given-up and dropped events are acknowledged in the journal")
        #expect(logs.messages.contains("a tracking event of 9 MB is too large; dropped"), "\(logs.messages)")
        #expect(logs.messages.contains("tracking batch cannot be sent: no topic; 1 event(s) dropped"), "\(logs.messages)")
        #expect(logs.messages.contains { $0.contains("(last: schema mismatch); given up") }, "\(logs.messages)")
    }
}
