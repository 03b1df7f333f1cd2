import ConvertCore
import ConvertMemory
import ConvertRules
import ConvertStorage
import ConvertTesting
import ConvertTracking
import ConvertVisitor
import Foundation
import Testing

private let experienceKey = "test-experience-ab-fullstack-1"

@Suite struct ConsentTests {
    /// A context of `harness` for `visitorId` that qualifies, with the consent given.
    private func context(_ harness: TestSDK, _ visitorId: String, _ consent: VisitorConsent) -> ConvertContext {
        let context = harness.sdk.createContext(visitorId: visitorId, attributes: qualifying, consent: consent)
        context.setLocationProperties(pricing)
        return context
    }

    @Test func withoutConsentAVisitorIsDecidedAlikeButNothingIsStoredOrSent() async throws {
        let consenting = try await started(), refusing = try await started()
        for n in 0..<50 {
            let visitor = "visitor-\(n)"
            let granted = context(consenting, visitor, .granted)
            let denied = context(refusing, visitor, .denied)
            #expect(denied.consent == .denied)
            #expect(denied.variation(forExperience: experienceKey)?.id == granted.variation(forExperience: experienceKey)?.id)
            #expect(denied.variations().map(\.id) == granted.variations().map(\.id))
            #expect(denied.features().map(\.status) == granted.features().map(\.status))
            #expect(await denied.trackConversion("button-primary-click") == .noConsent)
            await denied.setDefaultSegments(VisitorSegments(country: "DE"))
            #expect(await denied.runCustomSegments(["test-segment-1"]).isEmpty)
            denied.updateVisitorProperties(["country": "FR"])
            #expect(denied.variation(forExperience: experienceKey, exposure: .manual) != nil)
            #expect(await denied.trackExposure(forExperience: experienceKey) == .notDecided)
        }
        #expect(!consenting.sink.events.isEmpty)
        #expect(refusing.sink.events.isEmpty, "no bucketing, no conversion")
        #expect(refusing.store.count == 0, "no decision, goal or segment stored")
    }

    @Test func consentGrantedLaterAppliesToLaterCallsOnly() async throws {
        let harness = try await started()
        let context = context(harness, "later", .denied)
        let variation = try #require(context.variation(forExperience: experienceKey))
        #expect(harness.sink.events.isEmpty)
        #expect(harness.store.count == 0)

        context.setConsent(.granted)
        #expect(harness.sink.events.isEmpty, "a decision made before consent is not sent afterwards")
        #expect(context.variation(forExperience: experienceKey)?.id == variation.id)
        #expect(harness.sink.events.map(\.eventType) == ["bucketing"], "decided again with consent: stored and tracked")
        #expect(context.segments().browser == "FF", "the creation segments are stored once consent is given")
        #expect(await context.trackConversion("button-primary-click") == .tracked(eventCount: 1))
        #expect(context.visitorData().variationId(forExperienceId: variation.experienceId) == variation.id)

        context.setConsent(.denied)
        #expect(await context.trackConversion("button-primary-click") == .noConsent)
        #expect(harness.sink.events.count == 2)
    }

    @Test func theConfigurationSetsTheDefaultConsent() async throws {
        var configuration = ConvertConfiguration(sdkKey: "test-key")
        #expect(configuration.defaultConsent == .granted)
        configuration.defaultConsent = .denied
        let harness = TestSDK(data: try Fixtures.data(.cdnConfigBaseline), configuration: configuration)
        try await harness.sdk.ready(timeout: .patience)
        let byDefault = harness.sdk.createContext(visitorId: "default", attributes: qualifying)
        byDefault.setLocationProperties(pricing)
        #expect(byDefault.consent == .denied)
        #expect(byDefault.variation(forExperience: experienceKey) != nil)
        let given = context(harness, "given", .granted)
        #expect(given.variation(forExperience: experienceKey) != nil)
        #expect(harness.sink.events.map(\.visitorId) == ["given"])
    }
}
