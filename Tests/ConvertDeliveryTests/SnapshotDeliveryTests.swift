import ConvertSwiftSDK
import ConvertTesting
import Foundation
import Testing

@Suite struct SnapshotDeliveryTests {
    /// The default wiring of a snapshot SDK: no config request, bucketing posted to the
    /// snapshot's account and project.
    @Test func aSnapshotSDKPostsItsBucketingAndFetchesNothing() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 200) }
        defer { server.stop() }
        let decider = ConvertSwiftSDK(configData: try Fixtures.data(.cdnConfigBaseline),
                                      configuration: ConvertConfiguration(sdkKey: "", networkTracking: false, persistence: .memory),
                                      logSink: SilentLogSink())
        try await decider.ready(timeout: .patience)
        let context = decider.createContext(visitorId: "delivered", attributes: ["desktop": "true", "browser": "FF"])
        context.setLocationProperties(["location": "pricing"])
        let snapshot = try #require(context.snapshot(exposure: .none))
        #expect(snapshot.experiences.count == 2)

        let sdk = ConvertSwiftSDK(snapshot: try DecisionSnapshot(jsonData: try snapshot.jsonData()),
                                  configuration: loopbackConfiguration(server, sdkKey: "", persistence: .memory),
                                  logSink: SilentLogSink())
        try await sdk.ready(timeout: .patience)
        let variations = sdk.createContext(visitorId: "delivered").variations()
        #expect(variations.map(\.id) == snapshot.experiences.map(\.variationId))
        #expect(await sdk.flush(timeout: .patience))

        let requests = server.requests
        #expect(!requests.isEmpty)
        #expect(requests.allSatisfy { $0.method == "POST" && $0.path == "/10034190/v1/track/10035569/10034190" },
                "\(requests.map { "\($0.method) \($0.path)" })")
        let events = try requests.flatMap { try ReceivedBatch($0.body).events }
        #expect(events.map(\.type) == ["bucketing", "bucketing"])
        #expect(events.map { $0.data["experienceId"] as? String } == snapshot.experiences.map(\.experienceId))
        #expect(events.map { $0.data["variationId"] as? String } == snapshot.experiences.map(\.variationId))
    }
}
