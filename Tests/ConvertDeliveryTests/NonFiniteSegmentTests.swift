import ConvertFileStorage
import ConvertMemory
import ConvertSwiftSDK
import ConvertTesting
import Foundation
import Testing

/// NaN and the infinities given as segment values mean the same after a restart.
@Suite(.serialized) struct NonFiniteSegmentTests {
    private let values: [String: JSONValue] = [
        "country": .number(.nan), "browser": .number(.infinity), "source": .number(-.infinity),
        "devices": .array([.number(.nan), "tablet", .number(-.infinity)]),
        "campaign": .object(["depth": .number(.infinity), "name": "spring"]),
        "visitorType": .number(1.5),
    ]

    private func sdk(_ store: FileVisitorDataStore, _ sink: RecordingTrackingSink) throws -> ConvertSwiftSDK {
        ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "100/200", persistence: .memory),
                        ports: ConvertPorts(configSource: try StubConfigSource(initial: Fixtures.data(.cdnConfigBaseline)),
                                            visitorStore: store, visitorIdStore: MemoryVisitorIdStore(), trackingSink: sink))
    }

    @Test func nonFiniteSegmentValuesSurviveARestartOfTheFileStore() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("convert-nonfinite-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }

        let before: VisitorSegments
        let storedBefore: [String: JSONValue]
        do {
            let store = try FileVisitorDataStore(directory: directory)
            let sink = RecordingTrackingSink()
            let sdk = try sdk(store, sink)
            try await sdk.ready()
            let context = sdk.createContext(visitorId: "visitor", attributes: values)
            #expect(await context.trackConversion("button-primary-click") == .tracked(eventCount: 1))
            before = try #require(sink.events.last?.segments)
            storedBefore = context.segmentValues()
            _ = await sdk.shutdown(timeout: .seconds(1))
            _ = await store.flush()
        }
        #expect(before.country == "NaN" && before.browser == "Infinity" && before.source == "-Infinity")

        let store = try FileVisitorDataStore(directory: directory)
        await store.prepare()
        let sink = RecordingTrackingSink()
        let sdk = try sdk(store, sink)
        try await sdk.ready()
        let context = sdk.createContext(visitorId: "visitor")
        // Compared by their JavaScript string form: NaN is not equal to itself.
        let after = context.segmentValues()
        #expect(after.mapValues(\.javaScriptString) == storedBefore.mapValues(\.javaScriptString), "\(after)")
        #expect(after["country"]?.numberValue?.isNaN == true)
        #expect(after["source"] == .number(-.infinity))
        #expect(after["campaign"]?["depth"] == .number(.infinity), "inside an object too")
        #expect(after["devices"]?.arrayValue?.first?.numberValue?.isNaN == true, "and inside a list")
        #expect(await context.trackConversion("decrease-bounce-rate") == .tracked(eventCount: 1))
        #expect(sink.events.last?.segments == before, "the same segments are tracked after the restart")
        _ = await sdk.shutdown(timeout: .seconds(1))
    }
}
