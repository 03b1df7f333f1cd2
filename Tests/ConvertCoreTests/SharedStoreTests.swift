import ConvertCore
import ConvertEnvironment
import ConvertEvents
import ConvertMemory
import ConvertModel
import ConvertRules
import ConvertSharedStore
import ConvertStorage
import ConvertTesting
import ConvertTracking
import Foundation
import Testing

/// One "server": an SDK on a shared store over `backend`.
private struct Instance {
    let sdk: ConvertSwiftSDK
    let store: WriteBehindVisitorStore
    let sink: RecordingTrackingSink
    let logs: RecordingLogSink

    init(_ backend: any VisitorDataBackend, config: Data) async throws {
        logs = RecordingLogSink()
        store = WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore(capacity: 100_000), log: SDKLog(sink: logs, minimum: .debug))
        sink = RecordingTrackingSink()
        sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "k", persistence: .memory), ports: ConvertPorts(
            configSource: StubConfigSource(initial: config), visitorStore: store, visitorIdStore: MemoryVisitorIdStore(),
            trackingSink: sink, logSink: logs))
        try await sdk.ready(timeout: .patience)
    }

    func context(_ visitorId: String) async -> ConvertContext {
        let context = await sdk.loadContext(visitorId: visitorId, attributes: ["desktop": true, "browser": "FF"])
        context.setLocationProperties(["location": "pricing"])
        return context
    }
}

@Suite struct SharedStoreTests {
    @Test func theMemoryBackendKeepsTheBackendContract() async throws {
        try await VisitorDataBackendContract.verify(MemoryVisitorBackend())
    }

    @Test func theSharedStoreKeepsTheVisitorStoreContract() async throws {
        let backend = MemoryVisitorBackend()
        try await VisitorDataStoreContract.verify { WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore()) }
    }

    @Test func twoInstancesSendOneConversionPerVisitorAndGoal() async throws {
        let backend = MemoryVisitorBackend()
        let config = try Fixtures.data(.cdnConfigBaseline)
        let a = try await Instance(backend, config: config), b = try await Instance(backend, config: config)
        let visitors = (0..<1_000).map { "visitor-\($0)" }
        let results = await withTaskGroup(of: ConversionResult.self) { group in
            for track in 0..<10_000 {
                let instance = track % 2 == 0 ? a : b
                let visitor = visitors[(track * 7919) % visitors.count]
                group.addTask {
                    let context = instance.sdk.createContext(visitorId: visitor)
                    return await context.trackConversion("button-primary-click")
                }
            }
            return await group.reduce(into: [ConversionResult]()) { $0.append($1) }
        }
        let conversions = (a.sink.events + b.sink.events).filter { $0.eventType == "conversion" }
        #expect(results.count == 10_000)
        #expect(conversions.count == visitors.count, "one conversion per visitor across both instances, got \(conversions.count)")
        #expect(Set(conversions.map(\.visitorId)).count == visitors.count)
        #expect(results.filter { $0 == .duplicate }.count == 10_000 - visitors.count)
    }

    @Test func stickyDecisionsSurviveAnAllocationChangeAcrossInstances() async throws {
        let backend = MemoryVisitorBackend()
        let before = try await Instance(backend, config: try Fixtures.baselineReallocated([50, 50]))
        let after = try await Instance(backend, config: try Fixtures.baselineReallocated([100, 0]))
        var first: [String: String] = [:]
        for n in 0..<300 {
            let context = await before.context("v\(n)")
            first["v\(n)"] = try #require(context.variation(forExperience: "test-experience-ab-fullstack-1")?.key)
            #expect(await context.saveVisitorData())
        }
        #expect(Set(first.values).count == 2, "the 50/50 split gives both variations")
        var flipped = 0
        for (visitor, variation) in first {
            let context = await after.context(visitor)
            #expect(context.visitorDataLoad == .loaded)
            let kept = context.variation(forExperience: "test-experience-ab-fullstack-1")
            #expect(kept?.key == variation, "\(visitor) keeps its first variation")
            #expect(kept?.isStored == true)
            let fresh = after.sdk.createContext(visitorId: visitor + "-new", attributes: ["desktop": true, "browser": "FF"])
            fresh.setLocationProperties(["location": "pricing"])
            if fresh.variation(forExperience: "test-experience-ab-fullstack-1")?.key != variation { flipped += 1 }
        }
        #expect(flipped > 0, "the new allocation would have moved some visitors")
        #expect(after.sink.events.filter { $0.eventType == "bucketing" }.isEmpty == false)
    }

    @Test func aBackendThatIsDownNeverStopsDecisionsAndWritesCatchUp() async throws {
        let backend = MemoryVisitorBackend()
        let instance = try await Instance(backend, config: try Fixtures.data(.cdnConfigBaseline))
        backend.isAvailable = false
        let context = await instance.context("offline")
        guard case .failed = context.visitorDataLoad else {
            Issue.record("a failed load is reported: \(String(describing: context.visitorDataLoad))")
            return
        }
        let variation = context.variation(forExperience: "test-experience-ab-fullstack-1")
        #expect(variation != nil && variation?.isStored == false, "decided as a new visitor")
        #expect(await context.trackConversion("button-primary-click") == .tracked(eventCount: 1),
                "conversions fall back to this instance's dedup")
        #expect(await context.saveVisitorData() == false)
        #expect(instance.store.counters.loadFailures == 1)
        #expect(instance.store.counters.pending >= 1)
        #expect(instance.logs.messages.contains { $0.contains("could not be loaded") })

        backend.isAvailable = true
        _ = await instance.store.flush()
        let key = VisitorKey(namespace: "10035569-10034190", visitorId: "offline")
        #expect(backend.record(key)?.bucketing.values.contains(variation?.id ?? "?") == true, "the write caught up")
        #expect(instance.store.counters.pending == 0)
    }
}
