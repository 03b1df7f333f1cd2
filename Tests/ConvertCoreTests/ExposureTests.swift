import ConvertCore
import ConvertEnvironment
import ConvertMemory
import ConvertSharedStore
import ConvertStorage
import ConvertTesting
import ConvertTracking
import ConvertVisitor
import Foundation
import Testing

private let experienceKey = "test-experience-ab-fullstack-1"

private func bucketing(_ events: [TrackingEvent]) -> [TrackingEvent] {
    events.filter { $0.eventType == "bucketing" }
}

/// One "server" on a shared store over `backend`.
private struct SharedInstance {
    let sdk: ConvertSwiftSDK
    let sink = RecordingTrackingSink()

    init(_ backend: MemoryVisitorBackend, config: Data) async throws {
        let store = WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore())
        sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "k", persistence: .memory), ports: ConvertPorts(
            configSource: StubConfigSource(initial: config), visitorStore: store, visitorIdStore: MemoryVisitorIdStore(),
            trackingSink: sink))
        try await sdk.ready(timeout: .patience)
    }

    func context(_ visitorId: String) async -> ConvertContext {
        let context = await sdk.loadContext(visitorId: visitorId, attributes: qualifying)
        context.setLocationProperties(pricing)
        return context
    }
}

@Suite struct ExposureTests {
    @Test func anExposureTheQueueRefusesIsAnsweredDropped() async throws {
        let harness = try await started()
        let context = qualifyingContext(harness, "manual-refused")
        _ = try #require(context.variation(forExperience: experienceKey, exposure: .manual))
        _ = await harness.sink.shutdown(timeout: .seconds(1))
        #expect(await context.trackExposure(forExperience: experienceKey) == .dropped, "the event will never be sent")
        #expect(harness.sink.events.isEmpty)
        #expect(await context.trackExposure(forExperience: experienceKey) == .alreadyTracked, "counted as sent, as a conversion")
    }

    @Test func aManualDecisionSendsNothingUntilItsExposureIsTrackedOnce() async throws {
        let harness = try await started()
        let context = qualifyingContext(harness, "manual-1")
        let variation = try #require(context.variation(forExperience: experienceKey, exposure: .manual))
        #expect(harness.sink.events.isEmpty, "no bucketing event at decision time")
        #expect(context.visitorData().variationId(forExperienceId: variation.experienceId) == variation.id,
                "the decision is stored")

        #expect(await context.trackExposure(forExperience: experienceKey) == .tracked)
        let events = bucketing(harness.sink.events)
        #expect(events.count == 1)
        #expect(events.first?.payload == .bucketing(experienceId: variation.experienceId, variationId: variation.id))

        #expect(await context.trackExposure(forExperience: experienceKey) == .alreadyTracked)
        let again = qualifyingContext(harness, "manual-1")
        #expect(again.variation(forExperience: experienceKey, exposure: .manual)?.id == variation.id, "sticky")
        #expect(await again.trackExposure(forExperience: experienceKey) == .alreadyTracked)
        #expect(bucketing(harness.sink.events).count == 1)
    }

    @Test func exposureMarkersAreNotGoalsAndOneIsKeptPerExperience() async throws {
        let harness = try await started()
        let context = qualifyingContext(harness, "manual-markers")
        let variation = try #require(context.variation(forExperience: experienceKey, exposure: .manual))
        #expect(context.visitorData().goals.isEmpty, "a pending exposure is not a goal")
        #expect(context.visitorData().exposureMarkers.count == 1)
        #expect(await context.trackExposure(forExperience: experienceKey) == .tracked)
        #expect(await context.trackConversion("increase-engagement") == .tracked(eventCount: 1))
        let data = context.visitorData()
        #expect(data.goals.count == 1, "only the conversion: \(data.goals)")
        #expect(data.exposureMarkers.count == 1, "the sent marker replaced the pending one: \(data.exposureMarkers)")
        #expect(data.hasConverted(goalId: "exposure:\(variation.experienceId).\(variation.id)") == false)

        // Kept through Codable (a custom store's persistence), still apart from the goals.
        let decoded = try JSONDecoder().decode(VisitorData.self, from: JSONEncoder().encode(data))
        #expect(decoded == data)
        #expect(decoded.goals == data.goals)

        // A marker for another variation of the same experience replaces the experience's marker.
        var changed = data
        changed.setExposureMarker(InternedId("exposure-pending:\(variation.experienceId).other"), experienceId: variation.experienceId)
        #expect(changed.exposureMarkers == ["exposure-pending:\(variation.experienceId).other"])
        // Setting goals leaves the markers alone.
        changed.goals = ["g1"]
        #expect(changed.goals == ["g1"])
        #expect(changed.exposureMarkers.count == 1)
    }

    @Test func automaticAndNoExposureLeaveNothingForTrackExposure() async throws {
        let harness = try await started()
        let automatic = qualifyingContext(harness, "auto-1")
        #expect(automatic.variation(forExperience: experienceKey, exposure: .automatic) != nil)
        #expect(bucketing(harness.sink.events).count == 1, "sent at decision time, as without an exposure")
        #expect(await automatic.trackExposure(forExperience: experienceKey) == .notManual)

        let none = qualifyingContext(harness, "none-1")
        #expect(none.variation(forExperience: experienceKey, exposure: .none) != nil)
        #expect(await none.trackExposure(forExperience: experienceKey) == .notManual)
        #expect(bucketing(harness.sink.events).count == 1)
    }

    @Test func trackExposureWithoutADecisionSaysSo() async throws {
        let harness = try await started()
        let context = qualifyingContext(harness, "undecided")
        #expect(await context.trackExposure(forExperience: experienceKey) == .notDecided)
        #expect(await context.trackExposure(forExperience: "no-such-experience") == .notDecided)
        #expect(await context.trackExposure(forFeature: "feature-1") == .notDecided)
        #expect(harness.sink.events.isEmpty)
    }

    @Test func aRestartedSDKOnTheSameStoreDoesNotSendTheExposureAgain() async throws {
        let store = MemoryVisitorDataStore()
        let data = try Fixtures.data(.cdnConfigBaseline)
        let first = TestSDK(data: data, store: store)
        try await first.sdk.ready(timeout: .patience)
        let shown = qualifyingContext(first, "restart-shown")
        let pending = qualifyingContext(first, "restart-pending")
        let variation = try #require(shown.variation(forExperience: experienceKey, exposure: .manual))
        #expect(pending.variation(forExperience: experienceKey, exposure: .manual) != nil)
        #expect(await shown.trackExposure(forExperience: experienceKey) == .tracked)

        let second = TestSDK(data: data, store: store)
        try await second.sdk.ready(timeout: .patience)
        let shownAgain = qualifyingContext(second, "restart-shown")
        #expect(shownAgain.variation(forExperience: experienceKey, exposure: .manual)?.id == variation.id)
        #expect(await shownAgain.trackExposure(forExperience: experienceKey) == .alreadyTracked)
        // A manual decision not shown before the restart is still pending after it.
        #expect(await qualifyingContext(second, "restart-pending").trackExposure(forExperience: experienceKey) == .tracked)
        #expect(bucketing(second.sink.events).map(\.visitorId) == ["restart-pending"])
        #expect(bucketing(first.sink.events).map(\.visitorId) == ["restart-shown"])
    }

    @Test func twoSDKsOnOneSharedStoreSendOneExposure() async throws {
        let backend = MemoryVisitorBackend()
        let config = try Fixtures.data(.cdnConfigBaseline)
        let a = try await SharedInstance(backend, config: config), b = try await SharedInstance(backend, config: config)
        for n in 0..<20 {
            let visitor = "shared-\(n)"
            let onA = await a.context(visitor)
            let variation = try #require(onA.variation(forExperience: experienceKey, exposure: .manual))
            #expect(await onA.saveVisitorData())
            let onB = await b.context(visitor)
            #expect(onB.variation(forExperience: experienceKey, exposure: .manual)?.id == variation.id)
            let results = await withTaskGroup(of: ExposureResult.self) { group in
                for context in [onA, onB, onA, onB] {
                    group.addTask { await context.trackExposure(forExperience: experienceKey) }
                }
                return await group.reduce(into: [ExposureResult]()) { $0.append($1) }
            }
            #expect(results.filter { $0 == .tracked }.count == 1, "\(visitor): \(results)")
            #expect(results.filter { $0 == .alreadyTracked }.count == 3)
        }
        let events = bucketing(a.sink.events + b.sink.events)
        #expect(events.count == 20, "one bucketing event per visitor over both SDKs")
        #expect(Set(events.map(\.visitorId)).count == 20)
    }

    @Test func aFeatureExposureSendsTheBucketingOfItsDecidingExperience() async throws {
        let harness = try await started()
        let context = qualifyingContext(harness, "feature-manual")
        let feature = context.feature("feature-1", exposure: .manual)
        #expect(feature.status == .enabled)
        #expect(harness.sink.events.isEmpty)
        #expect(await context.trackExposure(forFeature: "feature-1") == .tracked)
        let events = bucketing(harness.sink.events)
        #expect(events.count == 1)
        #expect(events.first?.payload == .bucketing(experienceId: try #require(feature.experienceId),
                                                    variationId: try #require(feature.variationId)))
        #expect(await context.trackExposure(forFeature: "feature-1") == .alreadyTracked)
        #expect(await context.trackExposure(forExperience: experienceKey) == .alreadyTracked)
        #expect(bucketing(harness.sink.events).count == 1)
    }

    @Test func anExposureWaitsWhileTrackingIsOff() async throws {
        let harness = try await started()
        let context = qualifyingContext(harness, "tracking-off")
        #expect(context.variation(forExperience: experienceKey, exposure: .manual) != nil)
        await harness.sdk.setTrackingEnabled(false)
        #expect(await context.trackExposure(forExperience: experienceKey) == .trackingOff)
        await harness.sdk.setTrackingEnabled(true)
        #expect(await context.trackExposure(forExperience: experienceKey) == .tracked)
        #expect(bucketing(harness.sink.events).count == 1)
    }

    @Test func theEnableTrackingSpellingStaysTheAutomaticOrNoExposure() async throws {
        let harness = try await started()
        let tracked = qualifyingContext(harness, "spelling-on")
        let untracked = qualifyingContext(harness, "spelling-off")
        #expect(tracked.variation(forExperience: experienceKey) != nil)
        #expect(untracked.variation(forExperience: experienceKey, enableTracking: false) != nil)
        #expect(bucketing(harness.sink.events).map(\.visitorId) == ["spelling-on"])
        #expect(await untracked.trackExposure(forExperience: experienceKey) == .notManual)
    }
}
