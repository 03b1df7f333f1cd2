import ConvertRules
import Testing

/// Rules read from the JS SDK's rules-test-config, and the mutual-exclusion contract rows.
@Suite struct FixtureRuleTests {
    private func rules(_ collection: String, _ id: String) throws -> RuleSet {
        let data = try #require(try fixtureJSON("rules-test-config")["data"]?[collection]?.arrayValue)
        let entity = try #require(data.first { $0["id"] == .string(id) })
        return RuleSet(json: entity["rules"] ?? .null)
    }

    @Test func audienceNeedsBothVariablesOrTheThird() throws {
        let audience = try rules("audiences", "100299433")
        #expect(audience.matches(["varName1": "value1", "varName2": "VALUE2"]))
        #expect(!audience.matches(["varName1": "value1"]))
        #expect(audience.matches(["varName3": "something"]))
        #expect(!audience.matches(["varName3": "nothing", "varName1": "value1"]))
    }

    @Test func goalWithNegatedLessEqualExpressesGreaterThan() throws {
        let goal = try rules("goals", "100215959")
        #expect(goal.matches(["pages_visited_count": 2]))
        #expect(goal.matches(["visit_duration": "11"]))
        #expect(!goal.matches(["pages_visited_count": 1, "visit_duration": 10]))
        #expect(!goal.matches(["pages_visited_count": "many"]))
    }

    @Test func goalWithTwoCountryBrowserPairs() throws {
        let goal = try rules("goals", "100215961")
        #expect(goal.matches(["country": "us", "browser_name": "Chrome"]))
        #expect(goal.matches(["country": "GB", "browser_name": "safari"]))
        #expect(!goal.matches(["country": "GB", "browser_name": "chrome"]))
    }

    @Test func segmentMatchesBooleanAgainstStringForm() throws {
        let segment = try rules("segments", "200299434")
        #expect(segment.matches(["enabled": true]))
        #expect(segment.matches(["enabled": "true"]))
        #expect(!segment.matches(["enabled": false]))
    }

    @Test func mutualExclusionContractRows() throws {
        let fixture = try fixtureJSON("mutual-exclusion-rule-fixture")
        let experiences = try #require(fixture["config"]?["experiences"]?.arrayValue)
        var idByKey: [String: String] = [:]
        for e in experiences {
            if let key = e["key"]?.stringValue, let id = e["id"]?.stringValue { idByKey[key] = id }
        }
        let defaults = try #require(fixture["ruleDefaults"])
        let rows = try #require(fixture["rows"]?.arrayValue)
        #expect(rows.count == 8)
        for row in rows {
            let stored = row["storedBucketing"]?.objectValue ?? [:]
            let leaf: JSONValue = [
                "rule_type": defaults["rule_type"] ?? .null,
                "value": row["ruleValue"] ?? .null,
                "matching": ["match_type": defaults["matching"]?["match_type"] ?? .null,
                             "negated": row["negated"] ?? .null],
            ]
            // The leaf sits behind an unrelated, failing leaf: the membership leaf still decides.
            let noise: JSONValue = ["key": "x", "value": "y", "matching": ["match_type": "equals", "negated": false]]
            let set = RuleSet(json: ["OR": [["AND": [["OR_WHEN": [noise]]]], ["AND": [["OR_WHEN": [leaf]]]]]])
            let outcome = set.evaluate([:]) { key in
                idByKey[key].map { stored[$0] != nil }
            }
            #expect(outcome.matched == (row["expectedMatched"] == true), "row \(row["row"] ?? .null)")
            #expect((outcome.unresolvedExperienceKey != nil) == (row["expectWarn"] == true), "row \(row["row"] ?? .null)")
            #expect(outcome.decidingLeaf == RuleLocation(block: 1, group: 0, leaf: 0))
        }
    }
}
