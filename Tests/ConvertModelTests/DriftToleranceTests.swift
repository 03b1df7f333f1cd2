import ConvertBucketing
import ConvertModel
import ConvertRules
import ConvertTesting
import Foundation
import Testing

@Suite struct DriftToleranceTests {
    /// The baseline capture with every kind of drift injected, and one malformed experience.
    private func driftedBaseline() throws -> Data {
        var top = try #require(try JSONSerialization.jsonObject(with: Fixtures.data(.cdnConfigBaseline)) as? [String: Any])
        top["brand_new_top_level"] = ["nested": [1, 2, 3]]
        top["account_id"] = 10_035_569
        var experiences = try #require(top["experiences"] as? [[String: Any]])
        experiences[0]["id"] = 100_334_665
        experiences[0]["unknown_key"] = "whatever"
        experiences[0]["status"] = "hibernating"
        experiences[0]["version"] = "12"
        experiences[0]["site_area"] = NSNull()
        experiences[0]["settings"] = NSNull()
        experiences[1]["goals"] = NSNull()
        experiences[1]["environment"] = NSNull()
        experiences[1].removeValue(forKey: "version")
        var variations = try #require(experiences[2]["variations"] as? [[String: Any]])
        variations[0].removeValue(forKey: "traffic_allocation")
        variations[0].removeValue(forKey: "status")
        variations[1]["changes"] = NSNull()
        experiences[2]["variations"] = variations
        experiences[3]["settings"] = ["matching_options": ["audiences": "most-of-them", "extra": true]]
        experiences.append(["this is": "not", "an": "experience"] as [String: Any])
        top["experiences"] = experiences
        var audiences = try #require(top["audiences"] as? [[String: Any]])
        audiences[0]["type"] = "semi-permanent"
        top["audiences"] = audiences
        var segments = try #require(top["segments"] as? [[String: Any]])
        segments[0]["id"] = 10_033_690
        segments[0]["rules"] = NSNull()
        top["segments"] = segments
        var goals = try #require(top["goals"] as? [[String: Any]])
        goals[0]["type"] = 7
        goals[1]["rules"] = ["OR": [["AND": [["OR_WHEN": [["rule_type": "time_travel", "key": "year",
            "value": 1985, "matching": ["match_type": "equals", "negated": false]]]]]]]]
        top["goals"] = goals
        var features = try #require(top["features"] as? [[String: Any]])
        features[0]["variables"] = [["key": "enabled", "type": "tristate"], ["key": "caption", "type": "string"]]
        top["features"] = features
        var project = try #require(top["project"] as? [String: Any])
        project["utc_offset"] = 2
        project["id"] = 10_034_190
        top["project"] = project
        top["locations"] = (top["locations"] as? [Any] ?? []) + [NSNull()]
        return try JSONSerialization.data(withJSONObject: top)
    }

    @Test func onlyTheMalformedElementIsDroppedAndReported() throws {
        let decoded = try ConfigDecoder.decode(driftedBaseline())
        let config = decoded.config
        #expect(decoded.degradations == [
            ConfigDegradation(path: "experiences[4]", kind: .droppedElement, reason: "experience has no id"),
            ConfigDegradation(path: "locations[5]", kind: .droppedElement, reason: "element is not an object (null)"),
        ])
        #expect(config.accountId == "10035569")
        #expect(config.project.id == "10034190")
        #expect(config.project.utcOffset == 2)
        #expect((config.experiences.count, config.audiences.count, config.segments.count) == (4, 1, 1))
        #expect((config.locations.count, config.goals.count, config.features.count) == (5, 3, 6))
    }

    @Test func driftedValuesAreReadWithDefaults() throws {
        let config = try ConfigDecoder.decode(driftedBaseline()).config
        let first = config.experiences[0]
        #expect(first.id == "100334665")
        #expect(first.status == "hibernating")
        #expect(first.version == 12)
        #expect(first.bucketTable.layout == .anchored)
        #expect(first.siteArea == nil)
        #expect(first.audienceMatching == .any)
        #expect(config.experiences[1].goalIds.isEmpty)
        #expect(config.experiences[1].version == nil)
        #expect(config.experiences[1].bucketTable.layout == .packed)
        let third = config.experiences[2]
        #expect(third.variations[0].trafficAllocation == nil)
        #expect(third.variations[0].isActive)
        #expect(third.variations[1].changes.isEmpty)
        #expect(config.experiences[3].audienceMatching == .any)
        #expect(config.audiences[0].type == .other("semi-permanent"))
        #expect(config.segment(id: "10033690")?.rules == nil)
        #expect(config.goals[0].type == "7")
        #expect(config.goals[1].rules?.leaves.first?.ruleType == "time_travel")
        #expect(config.goals[1].rules?.matches(["year": 1985]) == true)
        #expect(config.features[0].variables.map(\.type) == [.other("tristate"), .string])
    }

    @Test func wrongTypedFieldsAreIgnoredAndReported() throws {
        let json = """
        {"account_id": "1", "project": {"id": "2"}, "experiences": [
          {"id": "e1", "key": "k1", "variations": [{"id": "v1", "traffic_allocation": "lots"}], "audiences": "a1"},
          {"id": "e2", "key": "k2", "variations": "none", "site_area": [1]}
        ], "goals": {"not": "an array"}}
        """
        let decoded = try ConfigDecoder.decode(Data(json.utf8))
        #expect(decoded.config.experiences.map(\.key) == ["k1", "k2"])
        #expect(decoded.degradations.map(\.path) == [
            "experiences[0].audiences", "experiences[0].variations[0].traffic_allocation",
            "experiences[1].site_area", "experiences[1].variations", "goals",
        ])
        #expect(decoded.degradations.map(\.kind) == [.ignoredField, .coercedField, .ignoredField, .ignoredField, .ignoredField])
        #expect(decoded.config.experiences[0].variations[0].trafficAllocation?.isNaN == true, "Number(\"lots\") is NaN")
    }

    @Test func variationWithoutIdIsDroppedAlone() throws {
        let json = """
        {"account_id": "1", "project": {"id": "2"}, "experiences": [
          {"id": "e1", "key": "k1", "variations": [{"id": "v1"}, {"key": "no-id"}, 5, {"id": 7, "traffic_allocation": "25"}]}
        ]}
        """
        let decoded = try ConfigDecoder.decode(Data(json.utf8))
        let e = try #require(decoded.config.experience(key: "k1"))
        #expect(e.variations.map(\.id) == ["v1", "7"])
        #expect(e.variations[1].trafficAllocation == 25)
        #expect(decoded.degradations.map(\.path) == ["experiences[0].variations[1]", "experiences[0].variations[2]"])
    }
}
