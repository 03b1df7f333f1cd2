import ConvertFileStorage
import ConvertMemory
import ConvertQueue
import ConvertSharedStore
import ConvertStorage
import ConvertSwiftSDK
import ConvertTesting
import Foundation
import Testing

private let qualifying: [String: JSONValue] = ["desktop": "true", "browser": "FF"]

/// `sdk.forget(visitorId:)`: the visitor's stored data in every store, and its unsent events.
@Suite struct ForgetVisitorTests {
    /// A context that qualifies for the baseline's experience, which it decides (one bucketing
    /// event) and converts on (one conversion).
    private func decideAndConvert(_ sdk: ConvertSwiftSDK, _ visitorId: String) async {
        let context = sdk.createContext(visitorId: visitorId, attributes: qualifying)
        context.setLocationProperties(["location": "pricing"])
        #expect(context.variation(forExperience: "test-experience-ab-fullstack-1") != nil)
        #expect(await context.trackConversion("button-primary-click") == .tracked(eventCount: 1))
    }

    @Test func forgettingDropsTheVisitorsDataAndUnsentEventsOnly() async throws {
        let clock = ManualClock()
        let journal = MemoryEventJournal()
        let delivery = RecordingTrackingDelivery()
        // Nothing goes out on its own: events wait for the flush.
        let options = TrackingQueueOptions(batchSize: 1_000, releaseInterval: .seconds(3_600))
        let queue = TrackingQueue(delivery: delivery, options: options, journal: journal, clock: clock)
        let store = MemoryVisitorDataStore()
        let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "k", persistence: .memory), ports: ConvertPorts(
            configSource: StubConfigSource(initial: try Fixtures.data(.cdnConfigBaseline)), visitorStore: store,
            visitorIdStore: MemoryVisitorIdStore(), trackingSink: queue))
        try await sdk.ready(timeout: .patience)
        await decideAndConvert(sdk, "gone")
        await decideAndConvert(sdk, "kept")
        #expect(queue.counters.pending == 4)
        #expect(store.count == 2)

        #expect(await sdk.forget(visitorId: "gone"))
        #expect(store.count == 1)
        #expect(sdk.createContext(visitorId: "gone").visitorData().isEmpty, "nothing stored for the visitor")
        #expect(!sdk.createContext(visitorId: "kept").visitorData().isEmpty)
        #expect(queue.counters.pending == 2)
        let journaled = try journal.pending().map { try JSONDecoder().decode(TrackingEvent.self, from: $0.payload).visitorId }
        #expect(journaled == ["kept", "kept"], "the journal keeps only the other visitor's events")

        // A restart on the journal recovers only what was kept.
        let restarted = TrackingQueue(delivery: RecordingTrackingDelivery(), options: options, journal: journal, clock: clock)
        #expect(restarted.counters.pending == 2)
        restarted.stop()

        #expect(await queue.flush(timeout: .patience))
        #expect(delivery.delivered.map(\.visitorId) == ["kept", "kept"])
        let counters = queue.counters
        #expect(counters.enqueued == counters.sent + counters.dropped + counters.rejected + counters.pending)
        #expect(counters.dropped == 2)
        _ = await queue.shutdown(timeout: .patience)
    }

    @Test func forgettingOnASharedStoreDeletesTheSharedRecord() async throws {
        let backend = MemoryVisitorBackend()
        let config = try Fixtures.data(.cdnConfigBaseline)
        func instance() async throws -> ConvertSwiftSDK {
            let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "k", persistence: .memory), ports: ConvertPorts(
                configSource: StubConfigSource(initial: config),
                visitorStore: WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore()),
                visitorIdStore: MemoryVisitorIdStore(), trackingSink: RecordingTrackingSink()))
            try await sdk.ready(timeout: .patience)
            return sdk
        }
        let a = try await instance(), b = try await instance()
        await decideAndConvert(a, "shared-gone")
        await decideAndConvert(a, "shared-kept")
        #expect(await a.createContext(visitorId: "shared-gone").saveVisitorData())
        #expect(await a.createContext(visitorId: "shared-kept").saveVisitorData())
        #expect(await b.loadContext(visitorId: "shared-gone").visitorDataLoad == .loaded)

        #expect(await a.forget(visitorId: "shared-gone"))
        #expect(a.createContext(visitorId: "shared-gone").visitorData().isEmpty)
        #expect(await b.loadContext(visitorId: "shared-gone").visitorDataLoad == .notFound, "deleted in the shared store")
        #expect(await b.loadContext(visitorId: "shared-kept").visitorDataLoad == .loaded)
        // A write behind after the forget has nothing of the visitor left to write.
        _ = await a.createContext(visitorId: "shared-gone").saveVisitorData()
        #expect(await b.loadContext(visitorId: "shared-gone").visitorDataLoad == .notFound)
    }

    @Test func theFileStoreForgetsAVisitorAcrossAReopen() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("forget-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let gone = VisitorKey(accountId: "1", projectId: "2", visitorId: "gone")
        let kept = VisitorKey(accountId: "1", projectId: "2", visitorId: "kept")
        do {
            let store = try FileVisitorDataStore(directory: directory)
            await store.prepare()
            store.update(gone) { $0.bucketing = ["100": "200"] }
            store.update(kept) { $0.bucketing = ["100": "201"] }
            store.update(gone) { $0.goals = ["300"] }
            _ = await store.flush()
            store.removeData(for: gone)
            #expect(store.data(for: gone) == nil)
            _ = await store.flush()
        }
        let reopened = try FileVisitorDataStore(directory: directory)
        await reopened.prepare()
        #expect(reopened.data(for: gone) == nil, "the change log does not bring the visitor back")
        #expect(reopened.data(for: kept)?.bucketing == ["100": "201"])
    }
}
