import ConvertCore
import ConvertEvents
import ConvertMemory
import ConvertModel
import ConvertRules
import ConvertStorage
import ConvertTesting
import ConvertTracking
import ConvertVisitor
import Foundation
import Testing

@Suite struct SegmentTests {
    @Test func defaultSegmentsKeepOnlyReportKeysAndFeedAudiences() async throws {
        let harness = try await started { json in
            try edit(&json, "audiences", at: 0) { audience in
                audience["rules"] = ["OR": [["AND": [["OR_WHEN": [["rule_type": "country", "key": "country", "value": "DE",
                    "matching": ["match_type": "equals", "negated": false]]]]]]]]
            }
        }
        let context = harness.sdk.createContext(visitorId: "geo")
        context.setLocationProperties(pricing)
        #expect(await context.runExperience("test-experience-ab-fullstack-1") == nil)
        await context.setDefaultSegments(["country": "DE", "favouriteColour": "blue", "devices": ["mobile", "tablet"]])
        #expect(context.segments() == VisitorSegments(country: "DE", devices: ["mobile", "tablet"]))
        #expect(await context.runExperience("test-experience-ab-fullstack-1") != nil)
        #expect(harness.sink.events.first?.segments?.country == "DE")
    }

    @Test func customSegmentsWithAndWithoutRuleData() async throws {
        let harness = try await started(.jsSDKTestConfig)
        let context = harness.sdk.createContext(visitorId: "custom")
        #expect(await context.runCustomSegments(["test-segments-1"], ruleData: ["enabled": false]) == [])
        #expect(await context.runCustomSegments(["test-segments-1", "nope"], ruleData: ["enabled": true]) == ["200299434"])
        #expect(await context.runCustomSegments(["test-segments-1"]) == [], "already present ids are skipped")
        #expect(context.segments().customSegments == ["200299434"])
        #expect(harness.logs.contains("no segment has the key \"nope\""))
        let other = harness.sdk.createContext(visitorId: "custom-2")
        #expect(await other.runCustomSegments(["test-segments-1"]) == ["200299434"])
    }
}

@Suite struct PreviewTests {
    @Test func previewForcesTheVariationAndLeavesNoTrace() async throws {
        let harness = try await started()
        let recorder = await EventRecorder(harness.sdk)
        let context = harness.sdk.createContext(visitorId: "previewer", attributes: ["convert_preview": "100334665.1003142551"])
        #expect(context.isPreviewing)
        let forced = await context.runExperience("test-experience-ab-fullstack-1")
        #expect(forced?.id == "1003142551")
        #expect(forced?.isPreview == true)
        context.setLocationProperties(pricing)
        context.setAttributes(["desktop": "true", "browser": "FF"])
        #expect(await context.runExperience("test-experience-ab-fullstack-4") != nil, "other experiences still decide")
        #expect(await context.runFeature("feature-1").variationId == "1003142551")
        #expect(await context.trackConversion("button-primary-click") == .previewing)
        await context.setDefaultSegments(VisitorSegments(country: "US"))
        #expect(await context.runCustomSegments(["test-segment-1"]) == [])
        #expect(harness.sink.events.isEmpty)
        #expect(harness.store.data(for: "10035569-10034190-previewer") == nil)
        let announced = await recorder.settled(.bucketing) + recorder.payloads(of: .conversion)
            + recorder.payloads(of: .segments) + recorder.payloads(of: .audiences) + recorder.payloads(of: .locationActivated)
        #expect(announced.isEmpty)
        context.clearPreview()
        #expect(await context.runExperience("test-experience-ab-fullstack-1") != nil)
        #expect(harness.sink.events.count == 1)
    }

    @Test func previewValuesMustBeDigitsDotDigits() async throws {
        let harness = try await started()
        let context = harness.sdk.createContext(visitorId: "p")
        for bad in ["", "1", "1.", ".1", "a.1", "1.2.3", "１.2", "1.-2"] {
            #expect(!context.setPreview(bad), "\(bad)")
        }
        #expect(!context.isPreviewing)
        #expect(context.setPreview("100334665.999"))
        #expect(await context.runExperience("test-experience-ab-fullstack-1") == nil, "unknown variation: nothing forced")
    }
}
