import ConvertCore
import ConvertModel
import ConvertRules
import ConvertTesting
import Foundation
import Testing

private let experienceOne = "test-experience-ab-fullstack-1"

/// Edits the experience with `key` in the config JSON.
private func change(_ json: inout [String: Any], _ key: String, _ body: (inout [String: Any]) -> Void) throws {
    let experiences = try #require(json["experiences"] as? [[String: Any]])
    let index = try #require(experiences.firstIndex { $0["key"] as? String == key })
    try edit(&json, "experiences", at: index, body)
}

@Suite struct DecisionDetailTests {
    @Test func aFreshDecisionAfterTargetingIsATargetingMatchAndTheNextIsCached() async throws {
        let harness = try await started()
        let context = qualifyingContext(harness, "detail-fresh")
        let fresh = context.variationDetail(forExperience: experienceOne)
        let config = try #require(harness.sdk.config)
        let expected = try expectedVariation(config, experienceKey: experienceOne, visitorId: "detail-fresh")
        #expect(fresh.value?.id == expected)
        #expect(fresh.reason == .targetingMatch && fresh.decisionReason == .bucketed)
        #expect(fresh.errorCode == nil && fresh.gate == nil)
        #expect(fresh.variant == fresh.value?.key)
        #expect(harness.sink.events(for: "detail-fresh").count == 1, "a detail call tracks as the plain call does")

        let again = context.variationDetail(forExperience: experienceOne)
        #expect(again.reason == .cached && again.decisionReason == .storedDecision)
        #expect(again.value?.id == expected)
        #expect(harness.sink.events(for: "detail-fresh").count == 1)
    }

    @Test func anExperienceThatTargetsEveryoneIsASplit() async throws {
        let harness = try await started { json in
            try change(&json, experienceOne) { $0["locations"] = [String](); $0["audiences"] = [String]() }
        }
        let detail = harness.sdk.createContext(visitorId: "splitter").variationDetail(forExperience: experienceOne)
        #expect(detail.reason == .split)
        #expect(detail.value != nil)
    }

    @Test func aVisitorKeptOutGetsTheDefaultAndTheGateThatFailed() async throws {
        let harness = try await started()
        let outsider = harness.sdk.createContext(visitorId: "outsider", attributes: ["browser": "CH"])
        outsider.setLocationProperties(pricing)
        let audience = outsider.variationDetail(forExperience: experienceOne)
        #expect(audience.value == nil && audience.reason == .default && audience.decisionReason == .audienceNotMatched)
        #expect(audience.gate == .audiences(ids: ["10033684"]))

        let elsewhere = harness.sdk.createContext(visitorId: "elsewhere", attributes: qualifying)
        elsewhere.setLocationProperties(["location": "nowhere"])
        let location = elsewhere.variationDetail(forExperience: experienceOne)
        #expect(location.reason == .default && location.decisionReason == .locationNotMatched)
        #expect(location.gate == .locations(ids: ["1003350", "1003351", "1003352", "10036409"]))
    }

    @Test func aVisitorOutsideTheRequiredSegmentsIsToldWhichWereRequired() async throws {
        let harness = try await started(environment: "production")
        let context = harness.sdk.createContext(visitorId: "no-segment", attributes: ["customSegments": ["999"]])
        context.setLocationProperties(["location": "statistics"])
        let detail = context.variationDetail(forExperience: "sample_ab_test")
        #expect(detail.decisionReason == .segmentNotMatched && detail.reason == .default)
        #expect(detail.gate == .segments(required: ["10033690"]))
    }

    @Test func noTrafficForTheVisitorsBucketIsTheTrafficGate() async throws {
        let harness = try await started { json in
            try change(&json, experienceOne) { experience in
                var variations = experience["variations"] as? [[String: Any]] ?? []
                for i in variations.indices { variations[i]["traffic_allocation"] = 0.0 }
                experience["variations"] = variations
            }
        }
        let detail = qualifyingContext(harness, "gap").variationDetail(forExperience: experienceOne)
        #expect(detail.value == nil && detail.reason == .default && detail.gate == .traffic)
    }

    @Test func archivedAndOtherEnvironmentsAreDisabled() async throws {
        let archived = try await started { json in json["archived_experiences"] = ["100334665"] }
        let gone = qualifyingContext(archived, "archived").variationDetail(forExperience: experienceOne)
        #expect(gone.reason == .disabled && gone.gate == .archived)

        let production = try await started(environment: "production")
        let other = qualifyingContext(production, "env").variationDetail(forExperience: experienceOne)
        #expect(other.reason == .disabled && other.gate == .environment(experience: "staging", sdk: "production"))
    }

    @Test func errorsCarryTheirCode() async throws {
        let harness = try await started()
        let unknown = qualifyingContext(harness, "unknown").variationDetail(forExperience: "nope")
        #expect(unknown.reason == .error && unknown.errorCode == .flagNotFound && unknown.value == nil)

        let blank = harness.sdk.createContext(visitorId: " ")
        let invalid = blank.variationDetail(forExperience: experienceOne)
        #expect(invalid.reason == .error && invalid.errorCode == .invalidVisitorId)
        #expect(blank.explanation(forExperience: experienceOne).reason == .invalidVisitorId,
                "explain checks the visitor id as every call does")

        let early = TestSDK(data: nil)
        let waiting = early.sdk.createContext(visitorId: "early").variationDetail(forExperience: experienceOne)
        #expect(waiting.reason == .error && waiting.errorCode == .notReady)
        let feature = early.sdk.createContext(visitorId: "early").featureDetail("feature-1")
        #expect(feature.errorCode == .notReady && !feature.value.isEnabled)
    }

    @Test func aPreviewIsStatic() async throws {
        let harness = try await started()
        let context = harness.sdk.createContext(visitorId: "qa", attributes: ["convert_preview": "100334665.1003142551"])
        let detail = context.variationDetail(forExperience: experienceOne)
        #expect(detail.reason == .static && detail.value?.id == "1003142551")
        #expect(detail.decisionReason == .preview && detail.value?.isPreview == true)
    }

    @Test func aFeatureReportsTheReasonOfTheExperienceThatSwitchedItOn() async throws {
        let harness = try await started()
        let context = qualifyingContext(harness, "feature-detail")
        let detail = context.featureDetail("feature-1")
        #expect(detail.value.isEnabled)
        #expect(detail.reason == .targetingMatch)
        #expect(detail.experiences.last?.experienceKey == experienceOne)
        #expect(detail.variant == detail.value.variationKey)
        #expect(context.featureDetail("feature-1").reason == .cached)

        let missing = context.featureDetail("no-such-feature")
        #expect(missing.reason == .error && missing.errorCode == .flagNotFound)
        let unattached = context.featureDetail("not-attached-feature-3")
        #expect(unattached.reason == .default && !unattached.value.isEnabled && unattached.experiences.isEmpty)
    }

    @Test func theDetailsValueIsThePlainCallsValue() async throws {
        let plain = try await started(), detailed = try await started()
        for n in 0..<120 {
            let attributes: [String: JSONValue] = n % 3 == 0 ? ["browser": "CH"] : qualifying
            let location: [String: JSONValue] = n % 5 == 0 ? ["location": "nowhere"] : pricing
            let a = plain.sdk.createContext(visitorId: "v\(n)", attributes: attributes)
            let b = detailed.sdk.createContext(visitorId: "v\(n)", attributes: attributes)
            a.setLocationProperties(location)
            b.setLocationProperties(location)
            for key in ["test-experience-ab-fullstack-1", "test-experience-ab-fullstack-4"] {
                #expect(a.variation(forExperience: key) == b.variationDetail(forExperience: key).value, "v\(n) \(key)")
            }
            #expect(a.feature("feature-1") == b.featureDetail("feature-1").value, "v\(n)")
        }
    }
}
