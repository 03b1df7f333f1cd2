import ConvertSwiftSDK
import ConvertTesting
import ConvertTransport
import Foundation
import Testing

/// `context.flush` — the JavaScript SDK's `releaseQueues` — through the default wiring: the
/// tracking queue and a transport that answers every request.
@Suite struct ReleaseQueuesTests {
    @Test func aContextReleasesTheQueueBeforeItsBatchIsDue() async throws {
        let transport = StubTransport { _ in HTTPResponse(status: 200) }
        // Neither the batch size nor the release interval would send the event during the test.
        let configuration = ConvertConfiguration(sdkKey: "10035569/10034190", eventsBatchSize: 100,
                                                 eventsReleaseIntervalMs: 3_600_000, persistence: .memory)
        let ports = ConvertPorts.live(configuration, logSink: RecordingLogSink(),
                                      directData: try Fixtures.data(.cdnConfigBaseline), transport: transport)
        let sdk = ConvertSwiftSDK(configuration: configuration, ports: ports)
        try await sdk.ready(timeout: .patience)
        let released = await EventRecorder(sdk, events: [.apiQueueReleased])

        let context = sdk.createContext(visitorId: "flusher")
        #expect(await context.trackConversion("button-primary-click") == .tracked(eventCount: 1))
        #expect(await context.flush(timeout: .patience), "acknowledged before the call returned")

        let tracking = transport.requests.filter { $0.url.path.hasSuffix("/track/10035569/10034190") }
        #expect(tracking.count == 1)
        let body = String(decoding: try #require(tracking.first?.body), as: UTF8.self)
        #expect(body.contains("\"visitorId\":\"flusher\"") && body.contains("100322784"))
        let payloads = try await released.wait(for: .apiQueueReleased)
        guard case .apiQueueReleased(let info) = payloads[0] else { throw ReleaseFailure() }
        #expect(info.eventCount == 1)
        #expect(sdk.trackingCounters.sent == 1)

        await context.flush()
        #expect(transport.requests.filter { $0.url.path.contains("/track/") }.count == 1, "nothing pending, nothing sent")
        _ = await sdk.shutdown(timeout: .seconds(5))
    }
}

private struct ReleaseFailure: Error {}
