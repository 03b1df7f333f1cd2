import ConvertCore
import ConvertEnvironment
import ConvertEvents
import ConvertSynchronization
import ConvertTesting
import Foundation
import Testing

@Suite struct TypedEventTests {
    @Test func subscribersGetThePayloadItselfWithoutAwaiting() async throws {
        let harness = try TestSDK(fixture: .cdnConfigBaseline)
        try await harness.sdk.ready(timeout: .patience)
        let received = Locked<[BucketingPayload]>([])
        // Synchronous: no await, and the callback's parameter is the bucketing payload.
        let token = harness.sdk.subscribe(to: .bucketing) { info in received.withValue { $0.append(info) } }
        let conversions = Locked(0)
        let other = harness.sdk.subscribe(to: .conversion) { _ in conversions.withValue { $0 += 1 } }

        let context = qualifyingContext(harness, "typed")
        let variation = try #require(context.variation(forExperience: "test-experience-ab-fullstack-1"))
        try await waitUntil { !received.value.isEmpty }
        #expect(received.value.first == BucketingPayload(visitorId: "typed", experienceId: "100334665",
                                                         experienceKey: "test-experience-ab-fullstack-1",
                                                         variationId: variation.id, variationKey: variation.key))

        harness.sdk.unsubscribe(token)
        harness.sdk.unsubscribe(other)
        // After unsubscribing, a new visitor's bucketing reaches nobody; a stream still sees it.
        let stream = harness.sdk.events(.bucketing)
        let later = qualifyingContext(harness, "after")
        _ = later.variation(forExperience: "test-experience-ab-fullstack-1")
        var iterator = stream.makeAsyncIterator()
        let next = try #require(await iterator.next())
        #expect(next.visitorId == "after")
        #expect(received.value.count == 1, "the cancelled subscription got nothing more")
        #expect(conversions.value == 0, "a subscription to another event gets no bucketing")
    }

    @Test func keyOrIdIsTheKeyOrTheIdWhenThereIsNone() async throws {
        let harness = try TestSDK(fixture: .cdnConfigBaseline)
        try await harness.sdk.ready(timeout: .patience)
        let variation = try #require(qualifyingContext(harness, "k").variation(forExperience: "test-experience-ab-fullstack-1"))
        #expect(variation.keyOrId == variation.key)

        // The same config without variation keys.
        var json = try #require(try JSONSerialization.jsonObject(with: Fixtures.data(.cdnConfigBaseline)) as? [String: Any])
        var experiences = try #require(json["experiences"] as? [[String: Any]])
        for index in experiences.indices {
            experiences[index]["variations"] = (experiences[index]["variations"] as? [[String: Any]])?.map { variation in
                variation.filter { $0.key != "key" }
            }
        }
        json["experiences"] = experiences
        let keyless = TestSDK(data: try JSONSerialization.data(withJSONObject: json))
        try await keyless.sdk.ready(timeout: .patience)
        let bare = try #require(qualifyingContext(keyless, "k").variation(forExperience: "test-experience-ab-fullstack-1"))
        #expect(bare.key == nil)
        #expect(bare.keyOrId == bare.id)
    }
}

/// Polls `condition` until it holds (the callbacks run on their own queue).
private func waitUntil(_ condition: () -> Bool) async throws {
    for _ in 0..<5_000 where !condition() { try await Task.sleep(for: .milliseconds(2)) }
    #expect(condition())
}
