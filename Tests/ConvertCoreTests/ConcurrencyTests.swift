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

@Suite struct ConcurrencyTests {
    private struct Outcome: Hashable {
        let visitor: String
        let variation: String?
        let conversion: ConversionResult
    }

    private func work(_ harness: TestSDK, visitor: String) async -> Outcome {
        let context = qualifyingContext(harness, visitor)
        let variation = await context.runExperience("test-experience-ab-fullstack-1")
        _ = await context.runFeature("feature-2")
        let conversion = await context.trackConversion("button-primary-click", goalData: [GoalDataItem(.amount, 5)])
        return Outcome(visitor: visitor, variation: variation?.id, conversion: conversion)
    }

    @Test func eightTasksOnSharedVisitorsMatchASerialRun() async throws {
        let visitors = (0..<50).map { "shared-\($0)" }
        let serial = try await started()
        var expected: [String: String?] = [:]
        for visitor in visitors { expected[visitor] = await work(serial, visitor: visitor).variation }

        let concurrent = try await started()
        let outcomes = await withTaskGroup(of: [Outcome].self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var out: [Outcome] = []
                    for visitor in visitors.shuffled() { out.append(await work(concurrent, visitor: visitor)) }
                    return out
                }
            }
            return await group.reduce(into: []) { $0 += $1 }
        }
        #expect(outcomes.count == 8 * visitors.count)
        for outcome in outcomes {
            #expect(outcome.variation == expected[outcome.visitor]!, "\(outcome.visitor)")
        }
        for visitor in visitors {
            let tracked = outcomes.filter { $0.visitor == visitor && $0.conversion != .duplicate }
            #expect(tracked.map(\.conversion) == [.tracked(eventCount: 2)], "exactly one first conversion for \(visitor)")
        }
        #expect(concurrent.sink.events.map(\.eventType).sorted() == serial.sink.events.map(\.eventType).sorted())
        #expect(concurrent.sink.events.count == visitors.count * 4)
        #expect(Set(concurrent.sink.events) == Set(serial.sink.events))
    }
}

@Suite struct MutualExclusionTests {
    /// The fixture's config, given an identity and an audience on exp-b holding the row's leaf.
    private func config(ruleValue: String, negated: Bool) throws -> Data {
        let fixture = try #require(try JSONSerialization.jsonObject(with: Fixtures.data(.mutualExclusionRules)) as? [String: Any])
        var config = try #require(fixture["config"] as? [String: Any])
        config["account_id"] = "1"
        config["project"] = ["id": "2"]
        config["audiences"] = [["id": "mx", "type": "transient", "rules": ["OR": [["AND": [["OR_WHEN": [
            ["rule_type": "bucketed_into_experience_key", "value": ruleValue,
             "matching": ["match_type": "equals", "negated": negated]]]]]]]]]]
        var experiences = try #require(config["experiences"] as? [[String: Any]])
        experiences[1]["audiences"] = ["mx"]
        config["experiences"] = experiences
        return try JSONSerialization.data(withJSONObject: config)
    }

    @Test func contractRowsThroughTheSDK() async throws {
        let fixture = try #require(try JSONSerialization.jsonObject(with: Fixtures.data(.mutualExclusionRules)) as? [String: Any])
        let rows = try #require(fixture["rows"] as? [[String: Any]])
        for row in rows {
            let ruleValue = try #require(row["ruleValue"] as? String)
            let negated = try #require(row["negated"] as? Bool)
            let harness = TestSDK(data: try config(ruleValue: ruleValue, negated: negated))
            try await harness.sdk.ready()
            let stored = row["storedBucketing"] as? [String: String] ?? [:]
            if !stored.isEmpty {
                harness.store.update("1-2-mx-visitor") { $0.bucketing = stored }
            }
            let context = harness.sdk.createContext(visitorId: "mx-visitor")
            let decided = await context.runExperience("exp-b")
            let description = row["description"] as? String ?? ""
            #expect((decided != nil) == (row["expectedMatched"] as? Bool), "\(description)")
            let warned = harness.logs.contains("names unknown experience key \"\(ruleValue)\"")
            #expect(warned == (row["expectWarn"] as? Bool), "\(description)")
            #expect(harness.store.data(for: "1-2-mx-visitor")?.bucketing["100111"] == stored["100111"],
                    "the rule never buckets its target")
        }
    }
}
