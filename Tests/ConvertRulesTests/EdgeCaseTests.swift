import ConvertRules
import Foundation
import Testing

@Suite struct EdgeCaseTests {
    @Test func missingKeyIsFalseAndNotNegated() {
        #expect(check(["other": "x"], "browser", "equals", "FF") == (false, false))
        #expect(rule("browser", "equals", "FF", negated: true).evaluate(["other": "x"]).verdict == .missingKey)
        #expect(check(["Browser": "FF"], "browser", "equals", "FF") == (false, false))
    }

    @Test func emptyDataIsFalse() {
        #expect(check([:], "browser", "equals", "FF") == (false, false))
        #expect(check([:], "browser", "not_exists", "") == (false, false))
    }

    @Test func unknownMatchTypeIsFalseEvenNegated() {
        #expect(check(["k": "v"], "k", "fuzzyMatch", "v") == (false, false))
        #expect(rule("k", "fuzzyMatch", "v").evaluate(["k": "v"]).verdict == .unknownMatchType("fuzzyMatch"))
    }

    @Test func unknownRuleTypeEvaluatesByKey() {
        #expect(rule("plan", "equals", "pro", type: "brand_new_rule_type").matches(["plan": "PRO"]))
        #expect(rule("plan", "equals", "pro", type: "brand_new_rule_type", ).leaves.first?.ruleType == "brand_new_rule_type")
    }

    @Test func invalidLeavesAreFalseEvenNegated() {
        let leaves: [JSONValue] = [
            ["key": "k", "value": "v"],
            ["key": "k", "value": "v", "matching": "equals"],
            ["key": "k", "value": "v", "matching": ["match_type": 3, "negated": false]],
            ["key": "k", "value": "v", "matching": ["match_type": "equals", "negated": "true"]],
            ["key": "k", "value": "v", "matching": ["match_type": "equals"]],
            ["key": "k", "matching": ["match_type": "equals", "negated": true]],
            "not an object",
        ]
        for leaf in leaves {
            let set = RuleSet(json: ["OR": [["AND": [["OR_WHEN": [leaf]]]]]])
            #expect(!set.matches(["k": "v"]), "\(leaf)")
            #expect(!set.matches(["k": "other"]), "\(leaf)")
            guard case .invalidLeaf? = set.evaluate(["k": "v"]).verdict else {
                Issue.record("expected an invalid-leaf verdict for \(leaf)")
                continue
            }
        }
    }

    @Test func nullValueIsPresentAndComparedAsNull() {
        #expect(rule("k", "equals", .null).matches(["k": "null"]))
        #expect(rule("k", "equals", .null).leaves.first?.invalidReason == nil)
    }

    @Test func multiLeafOrWhenNeedsAnyLeaf() {
        let set = RuleSet(json: ["OR": [["AND": [["OR_WHEN": [
            ["rule_type": "x", "key": "a", "value": "1", "matching": ["match_type": "equals", "negated": false]],
            ["rule_type": "x", "key": "b", "value": "2", "matching": ["match_type": "equals", "negated": false]],
        ]]]]]])
        #expect(set.matches(["a": "1"]))
        #expect(set.matches(["b": "2"]))
        #expect(set.matches(["a": "0", "b": "2"]))
        #expect(!set.matches(["a": "0", "b": "0"]))
        let outcome = set.evaluate(["a": "0", "b": "2"])
        #expect(outcome.decidingLeaf == RuleLocation(block: 0, group: 0, leaf: 1))
        #expect(outcome.verdict == .matched)
    }

    @Test func andNeedsEveryGroupAndOrNeedsAnyBlock() {
        let leafA: JSONValue = ["key": "a", "value": "1", "matching": ["match_type": "equals", "negated": false]]
        let leafB: JSONValue = ["key": "b", "value": "2", "matching": ["match_type": "equals", "negated": false]]
        let leafC: JSONValue = ["key": "c", "value": "3", "matching": ["match_type": "equals", "negated": false]]
        let set = RuleSet(json: ["OR": [
            ["AND": [["OR_WHEN": [leafA]], ["OR_WHEN": [leafB]]]],
            ["AND": [["OR_WHEN": [leafC]]]],
        ]])
        #expect(set.matches(["a": "1", "b": "2"]))
        #expect(!set.matches(["a": "1"]))
        #expect(set.matches(["c": "3"]))
        let miss = set.evaluate(["a": "1", "b": "0"])
        #expect(!miss.matched)
        #expect(miss.decidingLeaf == RuleLocation(block: 1, group: 0, leaf: 0))
        #expect(miss.verdict == .missingKey)
        let hit = set.evaluate(["a": "1", "b": "2"])
        #expect(hit.decidingLeaf == RuleLocation(block: 0, group: 1, leaf: 0))
    }

    @Test func emptyOrMissingLevelsNeverMatch() {
        let leaf: JSONValue = ["key": "a", "value": "1", "matching": ["match_type": "equals", "negated": false]]
        let shapes: [JSONValue] = [
            [:], ["OR": []], ["OR": [[:]]], ["OR": [["AND": []]]], ["OR": [["AND": [[:]]]]],
            ["OR": [["AND": [["OR_WHEN": []]]]]], ["OR": "x"], ["OR": [["AND": [["OR_WHEN": [leaf]], ["OR_WHEN": []]]]]],
            .null, "rules",
        ]
        for shape in shapes {
            let set = RuleSet(json: shape)
            #expect(!set.matches(["a": "1"]), "\(shape)")
        }
        #expect(RuleSet(json: ["OR": [["AND": []]]]).evaluate(["a": "1"]).decidingLeaf == nil)
    }

    @Test func emptyBlockDoesNotStopLaterBlocks() {
        let leaf: JSONValue = ["key": "a", "value": "1", "matching": ["match_type": "equals", "negated": false]]
        #expect(RuleSet(json: ["OR": [["AND": []], ["AND": [["OR_WHEN": [leaf]]]]]]).matches(["a": "1"]))
    }

    @Test func codableRoundTripKeepsTheTree() throws {
        let set = rule("age", "less", 30, negated: true)
        let data = try JSONEncoder().encode(set)
        #expect(try JSONDecoder().decode(RuleSet.self, from: data) == set)
    }

    @Test func leafBuiltInCode() {
        let leaf = RuleLeaf(key: "age", matchType: .less, value: 30, negated: true)
        let set = RuleSet(blocks: [[[leaf]]])
        #expect(set.matches(["age": 45]))
        #expect(!set.matches(["age": 20]))
    }
}
