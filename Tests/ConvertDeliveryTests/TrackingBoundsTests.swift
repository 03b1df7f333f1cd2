import ConvertQueue
import ConvertSwiftSDK
import ConvertTesting
import ConvertTransport
import ConvertVisitor
import Foundation
import Testing

@Suite struct TrackingBoundsTests {
    @Test func aRunawayGoalValueIsRefusedBeforeItIsQueued() async throws {
        let harness = try TestSDK(fixture: .cdnConfigBaseline)
        try await harness.sdk.ready(timeout: .patience)
        let context = harness.sdk.createContext(visitorId: "big-spender")
        let huge = String(repeating: "t", count: 100_000)
        let result = await context.trackConversion("button-primary-click", goalData: [GoalDataItem(.transactionId, .string(huge))])
        guard case .invalidGoalData(let why) = result else {
            Issue.record("expected invalid goal data, got \(result)")
            return
        }
        #expect(why.contains("transactionId"))
        #expect(harness.sink.events(for: "big-spender").isEmpty)
        let many = JSONValue.array((0..<101).map { .string("sku-\($0)") })
        #expect(await context.trackConversion("button-primary-click", goalData: [GoalDataItem(.customDimension1, many)])
            != .tracked(eventCount: 2))
    }

    @Test func requestsStayUnderTheByteLimitAndAnEventOverItAloneIsDropped() async throws {
        let transport = StubTransport { _ in HTTPResponse(status: 200) }
        let limit = 4_096
        let queue = TrackingQueue(transport: transport,
                                  endpoint: TrackingEndpoint(template: "https://track.example/[project_id]/v1", sdkKey: "k"),
                                  options: TrackingQueueOptions(batchSize: 100, releaseInterval: .milliseconds(10),
                                                                maximumBatchEvents: 100, maximumBatchBytes: limit))
        let padding = String(repeating: "p", count: 300)
        for n in 0..<40 {
            queue.enqueue(TrackingEvent(accountId: "1", projectId: "2", visitorId: "v\(n)",
                                        segments: VisitorSegments(country: padding),
                                        payload: .bucketing(experienceId: "e", variationId: "x")))
        }
        queue.enqueue(TrackingEvent(accountId: "1", projectId: "2", visitorId: "whale",
                                    segments: VisitorSegments(country: String(repeating: "w", count: 10_000)),
                                    payload: .bucketing(experienceId: "e", variationId: "x")))
        #expect(await queue.flush(timeout: .patience))
        let bodies = transport.requests.compactMap(\.body)
        #expect(bodies.count > 1, "the backlog went out in several requests")
        #expect(bodies.allSatisfy { $0.count <= limit }, "\(bodies.map { $0.count })")
        let sent = bodies.map { String(decoding: $0, as: UTF8.self) }
        #expect((0..<40).allSatisfy { n in sent.contains { $0.contains(#""visitorId":"v\#(n)""#) } }, "every small event was sent")
        #expect(!sent.contains { $0.contains("whale") })
        #expect(queue.counters.dropped == 1 && queue.counters.sent == 40)
        _ = await queue.shutdown(timeout: .seconds(5))
    }
}
