import ConvertCore
import ConvertEvents
import ConvertModel
import ConvertRules
import ConvertTesting
import ConvertVisitor
import Foundation
import Testing

@Suite struct SystemEventTests {
    @Test func rawValuesAreFrozen() {
        #expect(SystemEvent.allCases.map(\.rawValue) == [
            "ready", "config.updated", "api.queue.released", "bucketing", "conversion", "segments",
            "location.activated", "location.deactivated", "audiences", "datastore.queue.released",
        ])
    }

    @Test func decisionEventsCarryTheirPayloads() async throws {
        let harness = TestSDK(data: nil)
        let recorder = await EventRecorder(harness.sdk)
        await harness.source.push(try Fixtures.data(.cdnConfigBaseline))
        try await recorder.wait(for: .ready)

        let context = qualifyingContext(harness, "announced")
        let variation = try #require(await context.runExperience("test-experience-ab-fullstack-1"))
        let bucketing = try await recorder.wait(for: .bucketing)
        guard case .bucketing(let info) = bucketing[0] else { throw Failure("bucketing payload") }
        #expect(info == BucketingPayload(visitorId: "announced", experienceId: "100334665",
                                         experienceKey: "test-experience-ab-fullstack-1", variationId: variation.id,
                                         variationKey: variation.key))
        guard case .audiences(let audiences) = try await recorder.wait(for: .audiences)[0] else { throw Failure("audiences") }
        #expect(audiences == AudiencesPayload(visitorId: "announced", audienceIds: ["10033684"]))
        guard case .locationActivated(let activated) = try await recorder.wait(for: .locationActivated)[0] else {
            throw Failure("location.activated")
        }
        #expect(activated.locationKey == "pricing-location")
        #expect(activated.properties == ["location": "pricing"])

        context.setLocationProperties(["location": "events"])
        _ = await context.runExperience("test-experience-ab-fullstack-1")
        let deactivated = try await recorder.wait(for: .locationDeactivated)
        guard case .locationDeactivated(let gone) = deactivated[0] else { throw Failure("location.deactivated") }
        #expect(gone == LocationDeactivatedPayload(visitorId: "announced", locationId: "1003352", locationKey: "pricing-location"))
        #expect(try await recorder.wait(for: .locationActivated, count: 2).count == 2)

        await context.trackConversion("button-primary-click")
        guard case .conversion(let conversion) = try await recorder.wait(for: .conversion)[0] else { throw Failure("conversion") }
        #expect(conversion == ConversionPayload(visitorId: "announced", goalId: "100322784", goalKey: "button-primary-click"))

        await context.setDefaultSegments(VisitorSegments(country: "NL"))
        guard case .segments(let segments) = try await recorder.wait(for: .segments)[0] else { throw Failure("segments") }
        // The creation attributes' report key (browser) was stored with the context.
        #expect(segments == SegmentsPayload(visitorId: "announced", segments: VisitorSegments(country: "NL", browser: "FF")))

        _ = await context.runExperience("test-experience-ab-fullstack-1")
        #expect(await recorder.settled(.bucketing).count == 1, "a sticky decision is not announced again")
    }

    @Test func configUpdatedFiresOnlyForARealChange() async throws {
        let harness = TestSDK(data: nil)
        let recorder = await EventRecorder(harness.sdk, events: [.ready, .configUpdated])
        let original = try Fixtures.data(.cdnConfigBaseline)
        await harness.source.push(original)
        try await recorder.wait(for: .ready)
        await harness.source.push(original)
        var json = try #require(try JSONSerialization.jsonObject(with: original) as? [String: Any])
        json["_s_t"] = "2030-01-01 00:00:00Z"
        await harness.source.push(try JSONSerialization.data(withJSONObject: json))
        #expect(await recorder.settled(.configUpdated).isEmpty, "same content, new timestamp: no update")
        json["archived_experiences"] = ["100334665"]
        await harness.source.push(try JSONSerialization.data(withJSONObject: json))
        let updates = try await recorder.wait(for: .configUpdated)
        guard case .configUpdated(let payload) = updates[0] else { throw Failure("config.updated") }
        #expect(payload.snapshot?.archivedExperienceIds == ["100334665"])
        #expect(harness.sdk.config?.isArchived(experienceId: "100334665") == true)
        #expect(recorder.payloads(of: .ready).count == 1)
    }

    @Test func invalidLaterConfigKeepsTheCurrentOne() async throws {
        let harness = try await started()
        await harness.source.push(Data("{ not json".utf8))
        #expect(harness.sdk.config?.accountId == "10035569")
        #expect(harness.logs.contains("keeping the current config"))
    }

    @Test func slowSubscriberDelaysNeitherTheSDKNorOthers() async throws {
        let harness = try await started()
        let gate = DispatchSemaphore(value: 0)
        let slow = await harness.sdk.on(.bucketing) { _ in gate.wait() }
        let fast = await EventRecorder(harness.sdk, events: [.bucketing])
        let started = ContinuousClock.now
        for i in 0..<20 {
            _ = await qualifyingContext(harness, "s\(i)").runExperience("test-experience-ab-fullstack-1")
        }
        // The slow subscriber blocks until after the loop: waiting on it at all would hang here.
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(try await fast.wait(for: .bucketing, count: 20).count == 20)
        gate.signal()
        await harness.sdk.off(slow)
        for _ in 0..<20 { gate.signal() }
    }

    @Test func offStopsDeliveryForThatTokenOnly() async throws {
        let harness = try await started()
        let first = Counter(), second = Counter()
        let token = await harness.sdk.on(.conversion) { _ in first.increment() }
        _ = await harness.sdk.on(.conversion) { _ in second.increment() }
        await harness.sdk.off(token)
        await harness.sdk.off(token)
        await harness.sdk.createContext(visitorId: "off").trackConversion("button-primary-click")
        try await Task.sleep(for: .milliseconds(100))
        #expect(first.value == 0)
        #expect(second.value == 1)
    }

    @Test func mainActorDeliveryIsOptIn() async throws {
        _ = isOnMainQueue()
        let harness = try await started()
        let background = Counter()
        _ = await harness.sdk.on(.conversion) { _ in if !isOnMainQueue() { background.increment() } }
        let onMain = Counter()
        _ = await harness.sdk.on(.conversion, delivery: .mainActor) { _ in
            if isOnMainQueue() { onMain.increment() }
        }
        await harness.sdk.createContext(visitorId: "main").trackConversion("button-primary-click")
        let deadline = ContinuousClock.now + .patience
        while onMain.value == 0 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(onMain.value == 1)
        #expect(background.value == 1)
    }
}

private let mainQueueKey: DispatchSpecificKey<Bool> = {
    let key = DispatchSpecificKey<Bool>()
    DispatchQueue.main.setSpecific(key: key, value: true)
    return key
}()

/// Whether the caller runs on the main queue, where the main actor's jobs run.
func isOnMainQueue() -> Bool {
    DispatchQueue.getSpecific(key: mainQueueKey) == true
}

struct Failure: Error, CustomStringConvertible {
    let description: String
    init(_ what: String) { description = "unexpected payload for \(what)" }
}

