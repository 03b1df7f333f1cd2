import ConvertBucketing
import ConvertCore
import ConvertEvents
import ConvertMemory
import ConvertModel
import ConvertRules
import ConvertSynchronization
import ConvertTesting
import Foundation
import Testing

private let experienceKey = "test-experience-ab-fullstack-4"
private let experienceId = "100349071"

/// The sample config with its experiences changed by `change` (JSON objects, in config order).
private func baseline(_ change: (inout [[String: Any]]) -> Void) throws -> Data {
    var root = try #require(try JSONSerialization.jsonObject(with: Fixtures.data(.cdnConfigBaseline)) as? [String: Any])
    var experiences = try #require(root["experiences"] as? [[String: Any]])
    change(&experiences)
    root["experiences"] = experiences
    return try JSONSerialization.data(withJSONObject: root)
}

/// `experienceKey`'s variations changed by `change`.
private func withVariations(_ change: @escaping (inout [[String: Any]]) -> Void) throws -> Data {
    try baseline { experiences in
        guard let index = experiences.firstIndex(where: { $0["key"] as? String == experienceKey }),
              var variations = experiences[index]["variations"] as? [[String: Any]] else { return }
        change(&variations)
        experiences[index]["variations"] = variations
    }
}

/// Sets feature-2's `price` in every variation of `experienceKey`.
private func priced(_ price: Double) throws -> Data {
    try withVariations { variations in
        for v in variations.indices {
            guard var changes = variations[v]["changes"] as? [[String: Any]] else { continue }
            for c in changes.indices {
                guard var data = changes[c]["data"] as? [String: Any], "\(data["feature_id"] ?? "")" == "100334",
                      var variables = data["variables_data"] as? [String: Any] else { continue }
                variables["price"] = price
                data["variables_data"] = variables
                changes[c]["data"] = data
            }
            variations[v]["changes"] = changes
        }
    }
}

/// Collects a stream's elements on a task of its own.
private final class Collected<Element: Sendable>: Sendable {
    let items = Locked<[Element]>([])
    let task: Task<Void, Never>

    init(_ stream: AsyncStream<Element>) {
        let items = self.items
        task = Task { for await item in stream { items.withValue { $0.append(item) } } }
    }

    var value: [Element] { items.value }
}

@Suite struct ChangeStreamTests {
    @Test func aKeysStreamTellsAddedRemovedAndChangedAndNothingElse() async throws {
        let harness = try TestSDK(fixture: .cdnConfigBaseline)
        try await harness.sdk.ready(timeout: .patience)
        let experience = Collected(harness.sdk.changes(forKey: experienceKey))
        let carried = Collected(harness.sdk.changes(forKey: "feature-2"))
        let untouched = Collected(harness.sdk.changes(forKey: "feature-5"))

        await harness.source.push(try withVariations { $0[0]["traffic_allocation"] = 60.0; $0[1]["traffic_allocation"] = 40.0 })
        let changed = ConfigChange(kind: .experience, key: experienceKey, id: experienceId, change: .changed)
        let viaCarrier = ConfigChange(kind: .feature, key: "feature-2", id: "100334", change: .changed)
        try await eventually("the allocation change") { experience.value == [changed] && carried.value == [viaCarrier] }

        await harness.source.push(try baseline { $0.removeAll { $0["key"] as? String == experienceKey } })
        try await eventually("the removal") { experience.value.count == 2 && carried.value.count == 2 }
        #expect(experience.value.last == ConfigChange(kind: .experience, key: experienceKey, id: experienceId, change: .removed))
        #expect(carried.value.last == viaCarrier, "its only carrier is gone")

        await harness.source.push(try Fixtures.data(.cdnConfigBaseline))
        try await eventually("the addition") { experience.value.count == 3 }
        #expect(experience.value.last?.change == .added)
        #expect(experience.value.last?.description == "experience \(experienceKey) added")

        await harness.sdk.shutdown(timeout: .seconds(1))
        for stream in [experience.task, carried.task, untouched.task] { await stream.value }
        #expect(untouched.value.isEmpty, "feature-5's carrier never changed")
        #expect(harness.sdk.changeStreamCount == 0)
    }

    @Test func aVisitorIsToldOnlyWhenItsOwnValueChangesAndNothingIsRecorded() async throws {
        let harness = try TestSDK(fixture: .cdnConfigBaseline)
        try await harness.sdk.ready(timeout: .patience)
        let recorder = await EventRecorder(harness.sdk, events: [.bucketing, .audiences])
        // A visitor in the lower half of the buckets: "original" at 50/50 and still at 60/40.
        let visitor = try #require((0..<1000).map { "watcher-\($0)" }.first {
            BucketValue.of(experienceId: experienceId, visitorId: $0) < 4000
        })
        let context = harness.sdk.createContext(visitorId: visitor)
        context.setLocationProperties(["location": "pricing"])
        let features = Collected(context.updates(forFeature: "feature-2"))
        let variations = Collected(context.updates(forExperience: experienceKey))
        #expect(harness.sdk.changeStreamCount == 2)

        await harness.source.push(try withVariations { $0[0]["traffic_allocation"] = 60.0; $0[1]["traffic_allocation"] = 40.0 })
        await letTasksRun()
        #expect(features.value.isEmpty && variations.value.isEmpty, "the visitor's variation did not move")

        await harness.source.push(try priced(120))
        try await eventually("the new price") { features.value.count == 1 && variations.value.count == 1 }
        #expect(features.value[0].isEnabled && features.value[0].double("price") == 120)
        #expect(variations.value[0]?.key == "original")
        #expect(variations.value[0]?.isStored == false)
        #expect(context.explanation(forExperience: experienceKey).reason == .bucketed, "following stored no decision")

        await harness.source.push(try baseline { $0.removeAll { $0["key"] as? String == experienceKey } })
        try await eventually("the removal") { features.value.count == 2 && variations.value.count == 2 }
        #expect(features.value[1].status == .disabled)
        #expect(variations.value[1] == nil)

        #expect(harness.sink.events.isEmpty, "re-deciding tracks nothing")
        #expect(harness.store.count == 0, "re-deciding stores nothing")
        #expect(recorder.payloads.isEmpty, "re-deciding announces nothing")
        await harness.sdk.shutdown(timeout: .seconds(1))
        await features.task.value
        await variations.task.value
        #expect(harness.sdk.changeStreamCount == 0)
    }

    @Test func aStreamMadeBeforeReadinessYieldsTheFirstConfigsValue() async throws {
        let harness = TestSDK(data: nil)
        let context = harness.sdk.createContext(visitorId: "early")
        context.setLocationProperties(["location": "pricing"])
        let features = Collected(context.updates(forFeature: "feature-2"))
        await harness.source.push(try Fixtures.data(.cdnConfigBaseline))
        try await eventually("the first value") { features.value.count == 1 }
        #expect(features.value[0].isEnabled)
        #expect(harness.sink.events.isEmpty)
        await harness.sdk.shutdown(timeout: .seconds(1))
        await features.task.value
    }

    @Test func cancellingAConsumerUnsubscribesAndShutdownFinishesTheRest() async throws {
        let harness = try TestSDK(fixture: .cdnConfigBaseline)
        try await harness.sdk.ready(timeout: .patience)
        let context = harness.sdk.createContext(visitorId: "leaver")
        let cancelled = Task { for await _ in harness.sdk.changes(forKey: experienceKey) {} }
        let cancelledVisitor = Task { for await _ in context.updates(forFeature: "feature-2") {} }
        let kept = Collected(harness.sdk.changes(forKey: experienceKey))
        try await eventually("three subscriptions") { harness.sdk.changeStreamCount == 3 }
        cancelled.cancel()
        cancelledVisitor.cancel()
        await cancelled.value
        await cancelledVisitor.value
        try await eventually("the cancelled ones removed") { harness.sdk.changeStreamCount == 1 }

        // A stream dropped without ever being iterated is removed too.
        do { _ = context.updates(forExperience: experienceKey) }
        try await eventually("the dropped one removed") { harness.sdk.changeStreamCount == 1 }

        await harness.sdk.shutdown(timeout: .seconds(1))
        await kept.task.value
        #expect(harness.sdk.changeStreamCount == 0)
        var late = harness.sdk.changes(forKey: experienceKey).makeAsyncIterator()
        #expect(await late.next() == nil, "a stream asked for after shutdown is already finished")
        var lateVisitor = context.updates(forFeature: "feature-2").makeAsyncIterator()
        #expect(await lateVisitor.next() == nil)
    }
}
