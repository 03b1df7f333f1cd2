import ConvertFileStorage
import ConvertMemory
import ConvertSwiftSDK
import ConvertTesting
import ConvertTransport
import Foundation
import Testing

private let endpoint = TrackingEndpoint(template: "https://[project_id].metrics.example.com/v1", sdkKey: "100/200")

/// The bytes of the files in `directory`.
private func bytes(in directory: URL) -> Int {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
    return names.reduce(0) { total, name in
        let size = (try? FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(name).path)[.size]) as? Int
        return total + (size ?? 0)
    }
}

/// Events too large to send, and visitor values too large to keep rewriting.
@Suite(.serialized) struct OversizedVisitorDataTests {
    @Test func aConversionTooLargeToSendIsAnsweredDroppedNotTracked() async throws {
        let transport = StubTransport { _ in HTTPResponse(status: 200) }
        let logs = RecordingLogSink()
        let queue = TrackingQueue(transport: transport, endpoint: endpoint,
                                  options: TrackingQueueOptions(maximumBatchBytes: 4_096), log: SDKLog(sink: logs, minimum: .debug))
        let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "100/200", persistence: .memory),
                                  ports: ConvertPorts(configSource: try StubConfigSource(initial: Fixtures.data(.cdnConfigBaseline)),
                                                      visitorStore: MemoryVisitorDataStore(), visitorIdStore: MemoryVisitorIdStore(),
                                                      trackingSink: queue, logSink: logs))
        try await sdk.ready()
        // Over the 4 KiB request limit once it is in the event's segments.
        let context = sdk.createContext(visitorId: "big", attributes: ["country": .string(String(repeating: "x", count: 8_000))])
        let result = await context.trackConversion("button-primary-click")
        #expect(result == .dropped(eventCount: 1), "the event can never be sent: \(result)")
        #expect(queue.counters.dropped == 1)
        #expect(logs.contains("request limit"))

        let small = sdk.createContext(visitorId: "small", attributes: ["country": "DE"])
        #expect(await small.trackConversion("button-primary-click") == .tracked(eventCount: 1))
        #expect(await sdk.flush(timeout: .seconds(10)))
        #expect(transport.requests.count == 1, "only the event that fits is sent")
        _ = await sdk.shutdown(timeout: .seconds(1))
    }

    @Test func aHugeSegmentIsNotStoredSoEveryChangeStaysSmall() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("convert-oversized-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try FileVisitorDataStore(directory: directory)
        let logs = RecordingLogSink()
        let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "100/200", persistence: .memory),
                                  ports: ConvertPorts(configSource: try StubConfigSource(initial: Fixtures.data(.cdnConfigBaseline)),
                                                      visitorStore: store, visitorIdStore: MemoryVisitorIdStore(),
                                                      trackingSink: RecordingTrackingSink(), logSink: logs))
        try await sdk.ready()
        let huge = String(repeating: "y", count: 1 << 20)
        let context = sdk.createContext(visitorId: "visitor", attributes: ["country": .string(huge), "browser": "FF"])
        _ = await store.flush()
        // Four more changes of the visitor's record, each written out.
        for (key, value) in [("source", "search"), ("campaign", "spring"), ("visitorType", "new")] {
            await context.setDefaultSegments([key: .string(value)])
            _ = await store.flush()
        }
        await context.runCustomSegments(["test-segments-1"])
        _ = await store.flush()

        #expect(bytes(in: directory) < 64 * 1024, "\(bytes(in: directory)) bytes written for a visitor")
        #expect(context.segmentValues()["country"] == nil, "a value over the bound is not stored")
        #expect(context.segmentValues()["visitorType"] == "new", "the values within it are")
        #expect(logs.messages.filter { $0.contains("segment") && $0.contains("bytes") }.count == 1, "\(logs.messages)")
        _ = await sdk.shutdown(timeout: .seconds(1))
    }
}
