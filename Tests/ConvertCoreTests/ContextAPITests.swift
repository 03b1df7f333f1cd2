import ConvertCore
import ConvertEvents
import ConvertModel
import ConvertRules
import ConvertStorage
import ConvertTesting
import ConvertTracking
import ConvertVisitor
import Foundation
import Testing

/// The JavaScript SDK's context calls by their Swift names: visitor properties, visitor data,
/// config entities, conversion settings, and the change summary of `config.updated`.
@Suite struct ContextAPITests {
    private let experienceKey = "test-experience-ab-fullstack-1"

    /// A context on the pricing page (the experience's location) with these attributes.
    private func context(_ harness: TestSDK, _ visitorId: String, _ attributes: [String: JSONValue] = [:]) -> ConvertContext {
        let context = harness.sdk.createContext(visitorId: visitorId, attributes: attributes)
        context.setLocationProperties(pricing)
        return context
    }

    // MARK: updateVisitorProperties

    @Test func visitorPropertiesJoinTheContextsAudienceData() async throws {
        let harness = try await started()
        // The experience's audience needs desktop == true and a browser other than CH.
        let context = context(harness, "props", ["browser": "FF"])
        #expect(context.variation(forExperience: experienceKey) == nil)
        context.updateVisitorProperties(["desktop": true])
        #expect(context.variation(forExperience: experienceKey) != nil)
        #expect(context.visitorAttributes == ["browser": "FF"], "the attributes themselves are unchanged")
        #expect(context.visitorData().segmentValues == ["browser": "FF"], "a non-report key is not visitor data")
    }

    @Test func reportKeysAreStoredForEveryLaterContextOfTheVisitor() async throws {
        let harness = try await started()
        let recorder = await EventRecorder(harness.sdk, events: [.segments])
        harness.sdk.createContext(visitorId: "returning").updateVisitorProperties(["browser": "FF", "country": "DE"])
        #expect(await recorder.settled(.segments).isEmpty, "stored without a segments event, as in JavaScript")

        let later = context(harness, "returning", ["desktop": true])
        #expect(later.visitorData().segmentValues == ["browser": "FF", "country": "DE"])
        let variation = try #require(later.variation(forExperience: experienceKey), "the stored browser completes the audience")
        let bucketing = try #require(harness.sink.events(for: "returning").last)
        #expect(bucketing.payload == .bucketing(experienceId: "100334665", variationId: variation.id))
        #expect(bucketing.segments?.browser == "FF")
        #expect(bucketing.segments?.country == "DE")
        #expect(context(harness, "first-time", ["desktop": true]).variation(forExperience: experienceKey) == nil,
                "a visitor without the stored browser does not qualify")
    }

    @Test func storedListsAreUnitedAsJavaScriptMergesThem() async throws {
        let harness = try await started()
        let context = harness.sdk.createContext(visitorId: "lists", attributes: ["devices": ["desktop"]])
        context.updateVisitorProperties(["devices": ["tablet"], "browser": "FF"])
        context.updateVisitorProperties(["browser": "CH"])
        let stored = context.visitorData().segmentValues
        #expect(stored["browser"] == "CH", "a later scalar replaces the stored one")
        #expect(Set(stored["devices"]?.arrayValue?.compactMap(\.stringValue) ?? []) == ["desktop", "tablet"])
    }

    @Test func theContextsOwnAttributesWinOverItsProperties() async throws {
        let harness = try await started()
        let context = context(harness, "own-wins", ["browser": "FF", "desktop": false])
        context.updateVisitorProperties(["desktop": true])
        #expect(context.variation(forExperience: experienceKey) == nil, "desktop: false, given at creation, wins")
        context.setAttributes(["desktop": nil])
        #expect(context.variation(forExperience: experienceKey) != nil, "without the attribute the property shows")
    }

    @Test func aLaterPropertyReplacesAnEarlierOne() async throws {
        let harness = try await started()
        let context = context(harness, "replace", ["browser": "FF"])
        context.updateVisitorProperties(["desktop": false])
        #expect(context.variation(forExperience: experienceKey) == nil)
        context.updateVisitorProperties(["desktop": true])
        #expect(context.variation(forExperience: experienceKey) != nil)
    }

    @Test func aPreviewingContextChangesNothing() async throws {
        let harness = try await started()
        let context = context(harness, "previewer")
        #expect(context.setPreview("100334667.1003142554"))
        context.updateVisitorProperties(["browser": "FF", "desktop": true])
        context.clearPreview()
        #expect(context.visitorData().isEmpty)
        #expect(context.variation(forExperience: experienceKey) == nil, "no property was kept either")
    }

    @Test func beforeReadinessOnlyTheContextsPropertiesAreKept() async throws {
        let harness = TestSDK(data: nil)
        let context = context(harness, "early", ["browser": "FF"])
        context.updateVisitorProperties(["desktop": true, "country": "DE"])
        await harness.source.push(try Fixtures.data(.cdnConfigBaseline))
        try await harness.sdk.ready(timeout: .patience)
        #expect(context.visitorData().segmentValues == ["browser": "FF"], "country could not be stored without a config")
        #expect(context.variation(forExperience: experienceKey) != nil, "desktop was kept by the context")
    }

    // MARK: visitorData

    @Test func visitorDataHoldsDecisionsGoalsSegmentsAndLocations() async throws {
        let harness = try await started()
        let context = qualifyingContext(harness, "data")
        #expect(context.visitorData().segmentValues == ["browser": "FF"], "creation report keys are stored at once")
        let variation = try #require(context.variation(forExperience: experienceKey))
        #expect(await context.trackConversion("button-primary-click") == .tracked(eventCount: 1))
        let data = context.visitorData()
        #expect(data.bucketing == ["100334665": variation.id])
        #expect(data.goals == ["100322784"])
        #expect(data.locations.contains("pricing-location"))
        #expect(harness.sdk.createContext(visitorId: "data").visitorData() == data, "visitor data, not the context's")
        #expect(harness.sdk.createContext(visitorId: "stranger").visitorData().isEmpty)
    }

    @Test func visitorDataIsEmptyBeforeReadinessThenShowsTheCreationSegments() async throws {
        let harness = TestSDK(data: nil)
        let context = harness.sdk.createContext(visitorId: "waiting", attributes: ["browser": "FF", "plan": "pro"])
        #expect(context.visitorData().isEmpty)
        await harness.source.push(try Fixtures.data(.cdnConfigBaseline))
        try await harness.sdk.ready(timeout: .patience)
        #expect(context.visitorData().segmentValues == ["browser": "FF"])
    }

    // MARK: configEntity

    @Test func everyEntityKindIsFoundByKeyAndById() async throws {
        let harness = try await started()
        let sdk = harness.sdk
        let context = sdk.createContext(visitorId: "entities")
        #expect(sdk.configEntity(.experience, key: experienceKey)?.id == "100334665")
        #expect(context.configEntity(.experience, id: "100346442")?.key == "sample_ab_test")
        #expect(sdk.configEntity(.variation, key: "variation_a")?.id == "1003173818")
        #expect(context.configEntity(.variation, id: "1003142554")?.key == "1003142554-variation-1")
        #expect(sdk.configEntity(.feature, key: "feature-2")?.id == "100334")
        #expect(context.configEntity(.feature, id: "10031")?.key == "feature-1")
        #expect(sdk.configEntity(.audience, key: "adv-audience")?.id == "10033684")
        #expect(context.configEntity(.audience, id: "10033684")?.type == .permanent)
        #expect(sdk.configEntity(.segment, key: "test-segment-1")?.id == "10033690")
        #expect(context.configEntity(.segment, id: "10033690")?.key == "test-segment-1")
        #expect(sdk.configEntity(.location, key: "pricing-location")?.id == "1003352")
        #expect(context.configEntity(.location, id: "10036407")?.key == "homescreen")
        #expect(sdk.configEntity(.goal, key: "button-primary-click")?.id == "100322784")
        #expect(context.configEntity(.goal, id: "100322782")?.key == "decrease-bounce-rate")

        #expect(sdk.configEntity(.goal, key: "100322784") == nil, "a key lookup does not match ids")
        #expect(sdk.configEntity(.experience, id: experienceKey) == nil, "an id lookup does not match keys")
        #expect(context.configEntity(.variation, key: "no-such-variation") == nil)
    }

    @Test func entityKindsHaveTheJavaScriptNames() {
        let names = [ConfigEntityKind.experience.name, ConfigEntityKind.variation.name, ConfigEntityKind.feature.name,
                     ConfigEntityKind.audience.name, ConfigEntityKind.segment.name, ConfigEntityKind.location.name,
                     ConfigEntityKind.goal.name]
        #expect(names == ["experience", "variation", "feature", "audience", "segment", "location", "goal"])
    }

    @Test func noEntityBeforeReadiness() {
        let harness = TestSDK(data: nil)
        #expect(harness.sdk.configEntity(.goal, key: "button-primary-click") == nil)
        #expect(harness.sdk.createContext(visitorId: "early").configEntity(.feature, id: "10031") == nil)
    }

    // MARK: conversion settings

    @Test func conversionSettingsReadValuesWithJavaScriptTruthiness() {
        let on: [JSONValue] = [true, 1, "yes", "false", [], [:]]
        let off: [JSONValue] = [false, 0, "", .null]
        for value in on {
            #expect(ConversionSettings(["forceMultipleTransactions": value]).forceMultipleTransactions, "\(value)")
        }
        for value in off {
            #expect(!ConversionSettings(["forceMultipleTransactions": value]).forceMultipleTransactions, "\(value)")
        }
        #expect(!ConversionSettings(["forcemultipletransactions": true]).forceMultipleTransactions, "keys are exact")
        #expect(ConversionSettings() == ConversionSettings([:]))
        let literal: ConversionSettings = [.forceMultipleTransactions: 1]
        #expect(literal == ConversionSettings(forceMultipleTransactions: true))
        #expect(ConversionSettings.Key.allCases.map(\.rawValue) == ["forceMultipleTransactions"])
    }

    @Test func forceMultipleTransactionsThroughTheSettings() async throws {
        let harness = try await started()
        let context = harness.sdk.createContext(visitorId: "settings")
        let data = [GoalDataItem(.amount, 30), GoalDataItem(.transactionId, "T-7")]
        #expect(await context.trackConversion("button-primary-click", goalData: data, settings: [:]) == .tracked(eventCount: 2))
        #expect(await context.trackConversion("button-primary-click", goalData: data,
                                              settings: [.forceMultipleTransactions: 0]) == .duplicate)
        #expect(await context.trackConversion("button-primary-click", goalData: data,
                                              settings: ConversionSettings(["forceMultipleTransactions": "true"]))
                == .tracked(eventCount: 1))
        #expect(harness.sink.events.map(\.payload) == [
            .conversion(goalId: "100322784", goalData: nil, bucketingData: nil),
            .conversion(goalId: "100322784", goalData: data, bucketingData: nil),
            .conversion(goalId: "100322784", goalData: data, bucketingData: nil),
        ])
        #expect(await context.trackConversion("button-primary-click", settings: [.forceMultipleTransactions: true]) == .duplicate,
                "forcing without goal data sends nothing")
        #expect(await context.trackConversion("button-primary-click", ruleData: ["action": "browse"],
                                              settings: [.forceMultipleTransactions: true]) == .rulesNotMatched)
    }

    // MARK: config.updated

    @Test func configUpdatedSaysWhatChanged() async throws {
        let harness = TestSDK(data: nil)
        let recorder = await EventRecorder(harness.sdk, events: [.configUpdated])
        let original = try Fixtures.data(.cdnConfigBaseline)
        await harness.source.push(original)
        try await harness.sdk.ready(timeout: .patience)

        var json = try #require(try JSONSerialization.jsonObject(with: original) as? [String: Any])
        try edit(&json, "experiences", at: 2) { experience in
            var variations = experience["variations"] as? [[String: Any]] ?? []
            variations[1]["traffic_allocation"] = 7500
            experience["variations"] = variations
        }
        var goals = try #require(json["goals"] as? [[String: Any]])
        goals.removeFirst()
        json["goals"] = goals
        json["archived_experiences"] = ["100334667"]
        await harness.source.push(try JSONSerialization.data(withJSONObject: json))

        let updates = try await recorder.wait(for: .configUpdated)
        guard case .configUpdated(let payload) = updates[0] else { throw Failure("config.updated") }
        let changes = payload.changes
        #expect(changes.experiences == .init(changed: [ConfigEntityReference(id: "100346442", key: "sample_ab_test")]))
        #expect(changes.variations == .init(changed: [ConfigEntityReference(id: "1003173818", key: "variation_a")]))
        #expect(changes.goals == .init(removed: [ConfigEntityReference(id: "100322782", key: "decrease-bounce-rate")]))
        #expect(changes.archivedExperiences.added == [ConfigEntityReference(id: "100334667", key: "test-experience-ab-fullstack-3")])
        #expect(changes.features.isEmpty && changes.audiences.isEmpty && changes.locations.isEmpty && !changes.projectChanged)
        #expect(changes.experiences.affects(key: "sample_ab_test"))
        #expect(!changes.experiences.affects(key: experienceKey))
        #expect(payload.snapshot?.goal(key: "decrease-bounce-rate") == nil, "the payload keeps its snapshot")
        #expect(harness.logs.contains("experiences ~1, variations ~1, goals -1, archived 1"))
    }
}
