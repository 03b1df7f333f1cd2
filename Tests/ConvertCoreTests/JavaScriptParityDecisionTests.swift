import ConvertCore
import ConvertEvents
import ConvertModel
import ConvertRules
import ConvertTesting
import ConvertTracking
import ConvertVisitor
import Foundation
import Testing

// Decisions where the JavaScript SDK's result differed from an earlier reading of the contract;
// each expected value is what the JS SDK decides for the same config, context and visitor.

/// Edits the experience with `key` in the config JSON.
private func editExperience(_ json: inout [String: Any], _ key: String, _ change: (inout [String: Any]) -> Void) throws {
    let experiences = try #require(json["experiences"] as? [[String: Any]])
    let index = try #require(experiences.firstIndex { $0["key"] as? String == key })
    try edit(&json, "experiences", at: index, change)
}

@Suite struct EnvironmentAndLocationParityTests {
    @Test(arguments: ["empty", "null"])
    func anExperienceWithoutAnEnvironmentRunsInEveryEnvironment(_ name: String) async throws {
        let harness = try await started(environment: "staging") { json in
            try editExperience(&json, "test-experience-ab-fullstack-3") { $0["environment"] = name == "null" ? NSNull() : "" }
        }
        let context = harness.sdk.createContext(visitorId: "env-\(name)", attributes: qualifying)
        context.setLocationProperties(["screen": "home"])
        let variation = try #require(await context.runExperience("test-experience-ab-fullstack-3"), "environment \(name)")
        let config = try #require(harness.sdk.config)
        #expect(variation.id == (try expectedVariation(config, experienceKey: "test-experience-ab-fullstack-3",
                                                       visitorId: "env-\(name)")))
    }

    @Test func oneMatchingLocationIsEnoughEvenWhenMatchingOptionsSayAll() async throws {
        let harness = try await started { json in
            try editExperience(&json, "test-experience-ab-fullstack-1") { experience in
                experience["settings"] = ["matching_options": ["audiences": "any", "locations": "all"]]
            }
        }
        // Of the experience's four locations, only pricing-location matches these properties.
        let context = qualifyingContext(harness, "one-location")
        #expect(await context.runExperience("test-experience-ab-fullstack-1") != nil)
        let trace = await context.explainExperience("test-experience-ab-fullstack-1")
        #expect(trace.reason == .storedDecision)
    }
}

@Suite struct AudienceDataParityTests {
    @Test func customSegmentsInTheCreationAttributesOpenASegmentGatedExperience() async throws {
        let harness = try await started(environment: "production")
        let member = harness.sdk.createContext(visitorId: "seg-attr", attributes: ["customSegments": ["10033690"]])
        member.setLocationProperties(["location": "statistics"])
        #expect(await member.runExperience("sample_ab_test") != nil)
        #expect(member.segments().customSegments == ["10033690"])

        let outsider = harness.sdk.createContext(visitorId: "seg-none", attributes: ["customSegments": ["999"]])
        outsider.setLocationProperties(["location": "statistics"])
        #expect(await outsider.runExperience("sample_ab_test") == nil)
    }

    @Test func segmentsAddedAfterCreationOpenASegmentGatedExperience() async throws {
        // JS stores the custom segment, and the next decision's segment check reads the stored
        // segments: the context's data from its creation is not used stale.
        let harness = try await started(environment: "production")
        let context = harness.sdk.createContext(visitorId: "seg-later", attributes: ["browser": "FF"])
        context.setLocationProperties(["location": "statistics"])
        #expect(await context.runCustomSegments(["test-segment-1"]) == ["10033690"])
        #expect(await context.runExperience("sample_ab_test") != nil)
    }

    @Test func theReportKeysOfAContextAreStoredAndSentWithItsEvents() async throws {
        let harness = try await started()
        let context = harness.sdk.createContext(visitorId: "report", attributes: [
            "desktop": "true", "browser": "FF", "country": "NL", "devices": ["desktop"], "plan": "pro",
        ])
        #expect(context.segments() == VisitorSegments(country: "NL", browser: "FF", devices: ["desktop"]))
        context.setLocationProperties(pricing)
        _ = try #require(await context.runExperience("test-experience-ab-fullstack-1"))
        let event = try #require(harness.sink.events(for: "report").first)
        #expect(event.segments == VisitorSegments(country: "NL", browser: "FF", devices: ["desktop"]))
    }

    @Test func aReturningVisitorKeepsTheReportKeysOfEarlierContexts() async throws {
        let harness = try await started()
        // The audience needs desktop == true and a browser other than CH: the browser comes only
        // from the first context's attributes.
        _ = harness.sdk.createContext(visitorId: "returning", attributes: ["browser": "FF"])
        let later = harness.sdk.createContext(visitorId: "returning", attributes: ["desktop": "true"])
        later.setLocationProperties(pricing)
        #expect(await later.runExperience("test-experience-ab-fullstack-1") != nil)

        let stranger = harness.sdk.createContext(visitorId: "stranger", attributes: ["desktop": "true"])
        stranger.setLocationProperties(pricing)
        #expect(await stranger.runExperience("test-experience-ab-fullstack-1") == nil)
    }

    @Test func theContextsAttributesWinOverStoredSegments() async throws {
        let harness = try await started()
        let first = harness.sdk.createContext(visitorId: "override")
        await first.setDefaultSegments(VisitorSegments(browser: "CH"))
        let later = harness.sdk.createContext(visitorId: "override", attributes: ["desktop": "true", "browser": "FF"])
        later.setLocationProperties(pricing)
        #expect(await later.runExperience("test-experience-ab-fullstack-1") != nil)
        #expect(later.segments().browser == "FF", "the context's report keys are stored over the old ones")
    }

    @Test func storedCustomSegmentsAreUnitedWithNewOnes() async throws {
        let harness = try await started()
        _ = harness.sdk.createContext(visitorId: "united", attributes: ["customSegments": ["1", "2"]])
        let later = harness.sdk.createContext(visitorId: "united", attributes: ["customSegments": ["3", "1"]])
        #expect(later.segments().customSegments == ["3", "1", "2"])
    }

    @Test func aPreviewingContextStoresNoReportKeys() async throws {
        let harness = try await started()
        let context = harness.sdk.createContext(visitorId: "previewer", attributes: [
            "country": "NL", "convert_preview": "100334665.1003142550",
        ])
        #expect(context.segments() == VisitorSegments())
    }

    @Test func reportKeysGivenBeforeReadinessAreStoredOnceTheConfigArrives() async throws {
        let harness = TestSDK(data: nil)
        let context = harness.sdk.createContext(visitorId: "early-bird", attributes: ["country": "NL"])
        #expect(context.segments() == VisitorSegments())
        await harness.source.push(try Fixtures.data(.cdnConfigBaseline))
        try await harness.sdk.ready(timeout: .patience)
        _ = await context.runExperiences()
        #expect(context.segments().country == "NL")
    }
}

@Suite struct SeveralAudiencesParityTests {
    /// The baseline with two more (transient) audiences on every experience, any of them enough:
    /// the visitors below qualify through one audience each, or none.
    @Test func eachAudienceOfAnExperienceIsMatchedOnTheSameData() async throws {
        let harness = try await started { json in
            var audiences = try #require(json["audiences"] as? [[String: Any]])
            for (id, key, value) in [("900001", "browser", "ff"), ("900002", "mobile", "events")] {
                audiences.append(["id": id, "key": "aud-\(id)", "type": "transient", "rules": ["OR": [["AND": [["OR_WHEN": [[
                    "rule_type": "generic_text_key_value", "matching": ["match_type": "matches", "negated": false],
                    "value": value, "key": key]]]]]]]])
            }
            json["audiences"] = audiences
            try editExperience(&json, "test-experience-ab-fullstack-1") { experience in
                experience["audiences"] = ["10033684", "900001", "900002"]
                var settings = experience["settings"] as? [String: Any] ?? [:]
                var options = settings["matching_options"] as? [String: Any] ?? [:]
                options["audiences"] = "any"
                settings["matching_options"] = options
                experience["settings"] = settings
            }
        }
        // What the JavaScript SDK decides for these visitors on this config (its decide oracle).
        let expected: [(String, [String: JSONValue], String?)] = [
            ("multi-1", ["browser": "FF"], "1003142551"),
            ("multi-2", ["mobile": "EVENTS"], "1003142551"),
            ("multi-3", ["browser": "CH", "mobile": "no"], nil),
            ("multi-4", ["desktop": "true", "browser": "CH"], nil),
        ]
        for (visitorId, attributes, variationId) in expected {
            let context = harness.sdk.createContext(visitorId: visitorId, attributes: attributes)
            context.setLocationProperties(["location": "pricing"])
            #expect(context.variation(forExperience: "test-experience-ab-fullstack-1")?.id == variationId, "\(visitorId)")
        }
    }
}
