import ConvertRules
import Testing

/// `matches` answers without building outcomes; it must agree with `evaluate` everywhere.
@Suite struct FastPathTests {
    static let matchTypes = ["equals", "equalsNumber", "matches", "contains", "startsWith", "endsWith", "less",
                             "lessEqual", "isIn", "regexMatches", "exists", "not_exists", "doesNotExist", "bogus"]
    static let values: [JSONValue?] = [nil, .null, true, false, 0, 5, -0.5, 1e21, "", "abc", "ABC", "a|b", "3", "0,5",
                                       "-0", "007", "1234567890123456", [1, "a"], ["k": 1], "^a.c$", "["]

    @Test func theSweepNamesEveryOperatorByItsRawValue() {
        for matchType in MatchType.allCases {
            #expect(Self.matchTypes.contains(matchType.rawValue), "\(matchType) is not swept")
        }
    }

    @Test func matchesAgreesWithEvaluateOnEveryOperatorAndValue() {
        let dataSets: [[String: JSONValue]] = [
            [:],
            ["k": "abc"],
            ["k": 3, "other": "x"],
            ["k": "ABC|b", "a": 1, "b": 2, "c": 3, "d": 4, "e": 5],  // past the small-map scan
            ["k": [1, "a"]],
            ["k": ["k": 1]],
            ["k": .null],
            ["k": "007"],
            ["k": "-0"],
            ["k": "1234567890123456"],
            ["x": "abc"],
        ]
        var checked = 0
        for match in Self.matchTypes {
            for value in Self.values {
                for negated in [false, true] {
                    let rules = rule("k", match, value, negated: negated)
                    for data in dataSets {
                        #expect(rules.matches(data) == rules.evaluate(data).matched,
                                "\(match) \(String(describing: value)) negated=\(negated) data=\(data)")
                        checked += 1
                    }
                }
            }
        }
        #expect(checked == Self.matchTypes.count * Self.values.count * 2 * 11)
    }

    @Test func matchesAgreesOnMultiLevelTrees() {
        let leafA: JSONValue = ["key": "a", "matching": ["match_type": "equals", "negated": false], "value": "1"]
        let leafB: JSONValue = ["key": "b", "matching": ["match_type": "less", "negated": true], "value": 10]
        let leafC: JSONValue = ["key": "c", "matching": ["match_type": "exists", "negated": false]]
        let trees: [RuleSet] = [
            RuleSet(json: ["OR": [["AND": [["OR_WHEN": [leafA, leafB]], ["OR_WHEN": [leafC]]]], ["AND": [["OR_WHEN": [leafB]]]]]]),
            RuleSet(json: ["OR": [["AND": []], ["AND": [["OR_WHEN": [leafC]]]]]]),
            RuleSet(json: ["OR": [["AND": [["OR_WHEN": []]]]]]),
            RuleSet(json: ["OR": []]),
        ]
        let dataSets: [[String: JSONValue]] = [[:], ["a": "1"], ["a": 1, "c": ""], ["b": 12], ["b": "9", "c": 0], ["a": "2", "c": "x"]]
        for tree in trees {
            for data in dataSets {
                #expect(tree.matches(data) == tree.evaluate(data).matched, "\(data)")
            }
        }
    }

    @Test func integerFastPathParsesLikeTheGeneralPath() {
        #expect(JavaScriptNumber.parseNumeric("3") == 3)
        #expect(JavaScriptNumber.parseNumeric("007") == 7)
        #expect(JavaScriptNumber.parseNumeric("-0")?.sign == .minus)
        #expect(JavaScriptNumber.parseNumeric("-42") == -42)
        #expect(JavaScriptNumber.parseNumeric("999999999999999") == 999_999_999_999_999)
        #expect(JavaScriptNumber.parseNumeric("1234567890123456789") == Double("1234567890123456789"))
        #expect(JavaScriptNumber.parseNumeric("-") == nil)
        #expect(JavaScriptNumber.parseNumeric("") == nil)
        #expect(JavaScriptNumber.parseNumeric("1a") == nil)
        #expect(JavaScriptNumber.parseNumeric("1,000") == 1000)
    }
}
