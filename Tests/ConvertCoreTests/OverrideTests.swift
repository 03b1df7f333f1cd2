import ConvertCore
import ConvertMemory
import ConvertModel
import ConvertRules
import ConvertStorage
import ConvertTesting
import Foundation
import Testing

private let experienceOne = "test-experience-ab-fullstack-1"

@Suite struct OverrideTests {
    @Test func aForcedVariationBypassesEveryGateAndIsNeitherTrackedNorStored() async throws {
        let harness = try await started()
        var overrides = DecisionOverrides()
        overrides.forceVariation("1003142551-variation-1", forExperience: experienceOne)
        harness.sdk.setOverrides(overrides)
        // No attributes and no location: every gate would keep this visitor out.
        let context = harness.sdk.createContext(visitorId: "qa-anyone")
        let detail = context.variationDetail(forExperience: experienceOne)
        #expect(detail.value?.id == "1003142551" && detail.value?.isForced == true)
        #expect(detail.reason == .static && detail.decisionReason == .forced)
        #expect(harness.sink.events(for: "qa-anyone").isEmpty, "never tracked")
        #expect(context.segmentValues().isEmpty)
        #expect(harness.store.data(for: VisitorKey(accountId: "10035569", projectId: "10034190", visitorId: "qa-anyone")) == nil,
                "never stored")
        let trace = context.explanation(forExperience: experienceOne)
        #expect(trace.reason == .forced && trace.steps == [.forced(variationId: "1003142551")])

        harness.sdk.setOverrides(DecisionOverrides())
        #expect(context.variationDetail(forExperience: experienceOne).reason == .default, "cleared overrides decide again")
    }

    @Test func aForcedVariationGivesItsFeaturesToo() async throws {
        let harness = try await started()
        var overrides = DecisionOverrides()
        overrides.forceVariation("variation-1", forExperience: "test-experience-ab-fullstack-4")
        harness.sdk.setOverrides(overrides)
        // No attributes and no location: only the override gives this visitor a variation.
        let context = harness.sdk.createContext(visitorId: "qa-features")
        let one = context.feature("feature-1")
        #expect(one.isEnabled && one.experienceKey == "test-experience-ab-fullstack-4" && one.variationId == "1003180878")
        #expect(one.variables["caption"] == .string("Not allowed"))
        let all = context.features()
        #expect(all.first { $0.key == "feature-1" } == one, "features() agrees with feature(_:)")
        #expect(all.filter(\.isEnabled).map(\.key) == ["feature-1", "feature-2"])
        #expect(all.first { $0.key == "feature-2" }?.variationId == "1003180878")
        #expect(context.featureDetail("feature-2").value == all.first { $0.key == "feature-2" })
    }

    @Test func aVisitorsOwnOverrideWinsAndOthersAreUntouched() async throws {
        let harness = try await started()
        var overrides = DecisionOverrides()
        overrides.forceVariation("1003142550", forExperience: experienceOne)              // by id, for all
        overrides.forceVariation("1003142551-variation-1", forExperience: experienceOne, visitorId: "qa-1")
        harness.sdk.setOverrides(overrides)
        #expect(harness.sdk.createContext(visitorId: "qa-1").variation(forExperience: experienceOne)?.id == "1003142551")
        #expect(harness.sdk.createContext(visitorId: "qa-2").variation(forExperience: experienceOne)?.id == "1003142550")
        var unknown = DecisionOverrides()
        unknown.forceVariation("no-such-variation", forExperience: experienceOne)
        harness.sdk.setOverrides(unknown)
        #expect(harness.sdk.createContext(visitorId: "qa-3").variationDetail(forExperience: experienceOne).decisionReason
                != .forced, "an override naming no variation is ignored")
        #expect(harness.logs.contains("no variation has the key or id \"no-such-variation\""))
    }

    @Test func aForcedFeatureHasTheGivenStateAndVariables() async throws {
        let harness = try await started()
        var overrides = DecisionOverrides()
        overrides.forceFeature("feature-1", enabled: true, variables: ["caption": "QA"], visitorId: "qa")
        overrides.forceFeature("feature-2", enabled: false)
        harness.sdk.setOverrides(overrides)
        let qa = qualifyingContext(harness, "qa")
        let feature = qa.featureDetail("feature-1")
        #expect(feature.value.isEnabled && feature.value.variables == ["caption": "QA"] && feature.reason == .static)
        #expect(qa.features().first { $0.key == "feature-2" }?.isEnabled == false)
        #expect(harness.sink.events(for: "qa").isEmpty, "the forced feature decided no experience")
    }

    @Test func overridesComeFromJSONTheEnvironmentAndLaunchArguments() throws {
        let json = Data(#"{"all": {"variations": {"a": "v1"}}, "visitors": {"qa": {"features": {"f": {"enabled": true, "variables": {"x": 1}}}}}}"#.utf8)
        let decoded = try DecisionOverrides(json: json)
        #expect(decoded.variation(forExperience: "a", visitorId: "anyone") == "v1")
        #expect(decoded.feature("f", visitorId: "qa") == DecisionOverrides.Feature(enabled: true, variables: ["x": 1]))
        #expect(decoded.feature("f", visitorId: "other") == nil)

        let launched = DecisionOverrides(environment: ["CONVERT_FORCE": "a=v1, b = v2,junk"],
                                         arguments: ["/bin/app", "-ConvertForce", "c=v3", "-Other", "-ConvertForce", "d=v4"])
        #expect(launched.all.variations == ["a": "v1", "b": "v2", "c": "v3", "d": "v4"])
        #expect(DecisionOverrides(environment: [:], arguments: ["app"]).isEmpty)
        var manual = DecisionOverrides()
        #expect(throws: ConvertError.self) { try manual.force(pair: "no-equals") }
    }
}

/// The process environment is shared by every test of the process: one test reads it, serially.
@Suite(.serialized) struct LaunchOverrideTests {
    @Test func theEnvironmentForcesOnlyWhenTheAppOptsIn() throws {
        setenv(DecisionOverrides.environmentVariable, "\(experienceOne)=1003142551", 1)
        defer { unsetenv(DecisionOverrides.environmentVariable) }
        let data = try Fixtures.data(.cdnConfigBaseline)
        let ignoring = TestSDK(data: data)
        #expect(ignoring.sdk.overrides.isEmpty, "a server that happens to have the variable set forces nothing")
        let opted = TestSDK(data: data, configuration: ConvertConfiguration(sdkKey: "test-key", readsLaunchOverrides: true))
        #expect(opted.sdk.overrides.variation(forExperience: experienceOne, visitorId: "anyone") == "1003142551")
    }
}
