import ConvertCore
import ConvertModel
import ConvertTesting
import ConvertVisitor
import Testing

@Suite struct CompletionTwinTests {
    @Test func twinsGiveTheSameResultsAsTheAsyncCalls() async throws {
        let harness = try await started()
        let context = qualifyingContext(harness, "twin")
        let variation: BucketedVariation? = await withCheckedContinuation { c in
            context.runExperience("test-experience-ab-fullstack-1") { c.resume(returning: $0) }
        }
        #expect(variation?.id == (await context.runExperience("test-experience-ab-fullstack-1"))?.id)
        let feature: BucketedFeature = await withCheckedContinuation { c in context.runFeature("feature-1") { c.resume(returning: $0) } }
        #expect(feature.isEnabled)
        let features: [BucketedFeature] = await withCheckedContinuation { c in context.runFeatures { c.resume(returning: $0) } }
        #expect(features.count == 6)
        let all: [BucketedVariation] = await withCheckedContinuation { c in context.runExperiences { c.resume(returning: $0) } }
        #expect(all.count == 2)
        let conversion: ConversionResult = await withCheckedContinuation { c in
            context.trackConversion("button-primary-click") { c.resume(returning: $0) }
        }
        #expect(conversion == .tracked(eventCount: 1))
        await withCheckedContinuation { c in context.setDefaultSegments(VisitorSegments(country: "US")) { c.resume() } }
        #expect(context.segments().country == "US")
        let added: [String] = await withCheckedContinuation { c in context.runCustomSegments(["test-segment-1"]) { c.resume(returning: $0) } }
        #expect(added == ["10033690"])
        await withCheckedContinuation { c in harness.sdk.setTrackingEnabled(false) { c.resume() } }
        #expect(await !harness.sdk.isTrackingEnabled())
        await withCheckedContinuation { c in harness.sdk.flush { c.resume() } }
        #expect(harness.sink.flushCount == 1)
    }
}
