import ConvertOpenFeature
import ConvertSwiftSDK
import ConvertTesting
import Foundation
import OpenFeature
import Testing

/// Attributes and a location that bring a visitor into the baseline fixture's experiences.
private let qualifying: [String: OpenFeatureFieldValue] = [
    "browser": "FF", "desktop": "true", "varName1": "value1", "varName2": "value2", "varName3": "something",
    "locationProperties": .object(["location": "events"]),
]

private func context(_ visitorId: String?, _ fields: [String: OpenFeatureFieldValue] = qualifying) -> OpenFeatureEvaluationContext {
    OpenFeatureEvaluationContext(targetingKey: visitorId, fields: fields)
}

/// A provider over the baseline fixture, offline, tracking into a recording sink.
private func harness(_ options: ConvertOpenFeatureProvider.Options = .init()) async throws -> (ConvertOpenFeatureProvider, TestSDK) {
    let test = try TestSDK(fixture: .cdnConfigBaseline)
    let provider = ConvertOpenFeatureProvider(sdk: test.sdk, options: options)
    try await provider.ready(timeout: .seconds(30))
    return (provider, test)
}

@Suite struct ConvertOpenFeatureProviderTests {
    @Test func aFeatureKeyResolvesToWhetherTheFeatureIsOn() async throws {
        let (provider, _) = try await harness()
        let on = await provider.resolution(of: "feature-1", defaultValue: false, context: context("v1"))
        #expect(on.value == true)
        #expect(on.error == nil)
        #expect(on.reason == .targetingMatch)
        #expect(on.variant == "1003142551-variation-1")
        #expect(on.flagMetadata["experienceKey"] == .string("test-experience-ab-fullstack-1"))
        #expect(on.flagMetadata["featureId"] == .string("10031"))

        // The same visitor again: the stored decision.
        let again = await provider.resolution(of: "feature-1", defaultValue: false, context: context("v1"))
        #expect(again.value == true)
        #expect(again.reason == .cached)

        // Not targeted (no attributes, no location): off, not an error; the default does not apply.
        let off = await provider.resolution(of: "feature-1", defaultValue: true, context: context("v2", [:]))
        #expect(off.value == false)
        #expect(off.error == nil)
        #expect(off.reason == .default)
    }

    @Test func variablesResolveWithTheirDeclaredTypes() async throws {
        let (provider, _) = try await harness()
        let caption = await provider.resolution(of: "feature-1.caption", defaultValue: "none", context: context("v1"))
        #expect(caption.value == "Click that")
        #expect(caption.reason == .targetingMatch)
        let flag = await provider.resolution(of: "feature-1.enabled", defaultValue: true, context: context("v1"))
        #expect(flag.value == false)
        #expect(flag.error == nil)

        let mismatch = await provider.resolution(of: "feature-1.caption", defaultValue: 7, context: context("v1"))
        #expect(mismatch.value == 7)
        #expect(mismatch.error?.code == .typeMismatch)
        #expect(mismatch.reason == .error)

        // The feature is off for this visitor: the default, with the feature's reason.
        let unset = await provider.resolution(of: "feature-1.caption", defaultValue: "none", context: context("v2", [:]))
        #expect(unset.value == "none")
        #expect(unset.error == nil)
        #expect(unset.reason == .default)
    }

    @Test func numbersAndObjectsComeFromAForcedVariation() async throws {
        let (provider, test) = try await harness()
        var overrides = DecisionOverrides()
        overrides.forceVariation("original", forExperience: "test-experience-ab-fullstack-4")
        test.sdk.setOverrides(overrides)
        let visitor = context("qa-visitor", [:])

        let height = await provider.resolution(of: "feature-2.button-height", defaultValue: 0, context: visitor)
        #expect(height.value == 40)
        #expect(height.reason == .static)
        let price = await provider.resolution(of: "feature-2.price", defaultValue: 0.0, context: visitor)
        #expect(price.value == 100)
        let heightAsDouble = await provider.resolution(of: "feature-2.button-height", defaultValue: 0.0, context: visitor)
        #expect(heightAsDouble.value == 40, "an integer variable reads as a double")
        let priceAsInt = await provider.resolution(of: "feature-2.price", defaultValue: 1, context: visitor)
        #expect(priceAsInt.error?.code == .typeMismatch, "a float variable is not an integer")

        let data = await provider.resolution(of: "feature-2.additionalData", defaultValue: .init(.null), context: visitor)
        #expect(data.value.json == ["foo": "bar", "v": 2])
        let all = await provider.resolution(of: "feature-2", defaultValue: .init(.null), context: visitor)
        #expect(all.value.json["price"] == 100)
        #expect(all.value.json["button-height"] == 40)
        #expect(all.variant == "original")
    }

    @Test func anExperienceKeyResolvesToTheVariationKey() async throws {
        let (provider, test) = try await harness()
        let variation = await provider.resolution(of: "test-experience-ab-fullstack-1", defaultValue: "none", context: context("v1"))
        let sdkContext = test.sdk.createContext(visitorId: "v1", attributes: [
            "browser": "FF", "desktop": "true", "varName1": "value1", "varName2": "value2", "varName3": "something",
        ])
        sdkContext.setLocationProperties(["location": "events"])
        let direct = sdkContext.variationDetail(forExperience: "test-experience-ab-fullstack-1")
        #expect(direct.reason == .cached, "the SDK's own call sees the provider's decision")
        #expect(variation.value == direct.value?.variation.key)
        #expect(variation.value == "1003142551-variation-1")
        #expect(variation.variant == variation.value)
        #expect(variation.flagMetadata["variationId"] == .string("1003142551"))

        let excluded = await provider.resolution(of: "test-experience-ab-fullstack-1", defaultValue: "none", context: context("v9", [:]))
        #expect(excluded.value == "none")
        #expect(excluded.reason == .default)
        #expect(excluded.error == nil)

        let asBool = await provider.resolution(of: "test-experience-ab-fullstack-1", defaultValue: false, context: context("v1"))
        #expect(asBool.error?.code == .typeMismatch)
    }

    @Test func errorsCarryOpenFeatureCodes() async throws {
        let (provider, _) = try await harness()
        let missing = await provider.resolution(of: "no-such-flag", defaultValue: true, context: context("v1"))
        #expect(missing.value == true)
        #expect(missing.error?.code == .flagNotFound)
        #expect(missing.reason == .error)
        let missingVariable = await provider.resolution(of: "feature-1.nope", defaultValue: "d", context: context("v1"))
        #expect(missingVariable.error?.code == .flagNotFound)

        let anonymous = await provider.resolution(of: "feature-1", defaultValue: true, context: context(nil))
        #expect(anonymous.error?.code == .targetingKeyMissing)
        #expect(anonymous.value == true)
        let noContext = await provider.resolution(of: "feature-1", defaultValue: 3.5, context: nil)
        #expect(noContext.error?.code == .targetingKeyMissing)

        let tooLong = await provider.resolution(of: "feature-1", defaultValue: true,
                                                context: context(String(repeating: "x", count: ConvertContext.maximumVisitorIdBytes + 1)))
        #expect(tooLong.error?.code == .invalidContext)

        let unready = ConvertOpenFeatureProvider(sdk: TestSDK(data: nil).sdk)
        let early = await unready.resolution(of: "feature-1", defaultValue: false, context: context("v1"))
        #expect(early.error?.code == .providerNotReady)
        #expect(early.value == false)
    }

    @Test func theClientEvaluatesThroughTheProvider() async throws {
        let (provider, _) = try await harness()
        OpenFeatureSystem.setProvider(provider)
        let client = OpenFeatureSystem.client(evaluationContext: context("v1"))
        let evaluation = await client.evaluation(of: "feature-1", defaultingTo: false)
        #expect(evaluation.value == true)
        #expect(evaluation.reason == .targetingMatch)
        #expect(await client.value(for: "feature-1.caption", defaultingTo: "none") == "Click that")
        let failed = await client.evaluation(of: "missing", defaultingTo: 5)
        #expect(failed.error?.code == .flagNotFound)
        #expect(failed.value == 5)
    }

    @Test func trackingAConversionAndDecisionsGoToTheSDKsSink() async throws {
        let (provider, test) = try await harness()
        _ = await provider.resolution(of: "feature-1", defaultValue: false, context: context("buyer"))
        let bucketing = test.sink.events(for: "buyer")
        #expect(!bucketing.isEmpty, "a decision sends its bucketing event")

        let result = await provider.track("increase-engagement", context: context("buyer"),
                                          details: .init(value: 19.5, fields: ["transactionId": "T-1", "ignored": 3]))
        #expect(result == .tracked(eventCount: 2), "the conversion and its transaction")
        let events = test.sink.events(for: "buyer").dropFirst(bucketing.count)
        #expect(events.count == 2)
        let duplicate = await provider.track("increase-engagement", context: context("buyer"))
        #expect(duplicate == .duplicate)
        #expect(await provider.track("no-such-goal", context: context("buyer")) == .unknownGoal)
        #expect(await provider.track("increase-engagement", context: context(nil)) == .invalidVisitorId)

        let quiet = try await harness(.init(tracksDecisions: false))
        _ = await quiet.0.resolution(of: "feature-1", defaultValue: false, context: context("silent"))
        #expect(quiet.1.sink.events(for: "silent").isEmpty)
    }

    @Test func contextFieldsBecomeAttributesAndLocationProperties() async throws {
        let (provider, test) = try await harness()
        let fields: [String: OpenFeatureFieldValue] = [
            "count": 3, "ratio": 0.5, "flag": true, "name": "n", "when": .date(Date(timeIntervalSince1970: 0)),
            "nested": .object(["a": [1, 2]]), "locationProperties": .object(["location": "events"]),
        ]
        let recorder = AttributeRecorder()
        test.sdk.addHook(recorder)
        _ = await provider.resolution(of: "feature-1", defaultValue: false, context: context("fields", fields))
        let attributes = try #require(recorder.attributes.first)
        #expect(attributes["count"] == 3)
        #expect(attributes["ratio"] == 0.5)
        #expect(attributes["flag"] == true)
        #expect(attributes["name"] == "n")
        #expect(attributes["when"] == "1970-01-01T00:00:00Z")
        #expect(attributes["nested"] == ["a": [1, 2]])
        #expect(attributes["locationProperties"] == nil, "location properties are not attributes")
    }

    @Test func runWaitsForReadinessAndShutsDownWhenCancelled() async throws {
        let test = TestSDK(data: nil)
        let provider = ConvertOpenFeatureProvider(sdk: test.sdk, options: .init(shutdownTimeout: .seconds(1)))
        let running = Task { try await provider.run() }
        let early = await provider.resolution(of: "feature-1", defaultValue: false, context: context("v1"))
        #expect(early.error?.code == .providerNotReady)
        await test.source.push(try Fixtures.data(.cdnConfigBaseline))
        try await provider.ready(timeout: .seconds(30))
        let ready = await provider.resolution(of: "feature-1", defaultValue: false, context: context("v1"))
        #expect(ready.value == true)
        #expect(test.sink.flushCount == 0)
        running.cancel()
        try await running.value
        #expect(test.sink.flushCount == 1, "shutting down delivers what is pending")
        #expect(await provider.resolution(of: "feature-1", defaultValue: false, context: context("v1")).value == true,
                "decisions go on after shutdown")
    }
}

/// Records the attributes every evaluation was made with.
private final class AttributeRecorder: EvaluationHook, @unchecked Sendable {
    // Every access holds the lock.
    private let lock = NSLock()
    private var recorded: [[String: JSONValue]] = []
    var attributes: [[String: JSONValue]] { lock.withLock { recorded } }
    func before(_ context: HookContext) throws {
        lock.withLock { recorded.append(context.attributes) }
    }
}
