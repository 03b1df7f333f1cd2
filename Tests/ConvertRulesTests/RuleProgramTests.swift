import ConvertRules
import Testing

/// The compiled program answers as `RuleSet.matches` for every rule set it holds.
@Suite struct RuleProgramTests {
    /// Values a visitor gives: every kind, ASCII and not, numeric strings, casing.
    static let visitorValues: [JSONValue] = [
        .null, true, false, 0, 3, 5, -0.5, 1e21, "", "abc", "ABC", "Pricing", "pricing", "PRICING ", "3", "5", "007",
        "-0", "0,5", "1a", "İ", "straße", "STRASSE", "ǅ", "a|b", [1, "a"], ["k": 1], "1234567890123456",
    ]

    /// Data sets over the keys `k` and `j`, small and past four members.
    static let dataSets: [[String: JSONValue]] = {
        var sets: [[String: JSONValue]] = [[:], ["other": "x"]]
        for value in visitorValues {
            sets.append(["k": value])
            sets.append(["j": "abc", "k": value])
            sets.append(["a": 1, "b": 2, "c": 3, "d": 4, "k": value])  // past the inline four
            sets.append(["a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "j": value])
        }
        return sets
    }()

    @Test func oneLeafSetsAgreeOnEveryOperatorValueAndData() {
        var sets: [RuleSet?] = [nil]
        for match in FastPathTests.matchTypes {
            for value in FastPathTests.values + [.string("pricing"), .string("PRICING"), .string("straße"), 5, 3] {
                for negated in [false, true] {
                    sets.append(rule("k", match, value, negated: negated))
                    sets.append(rule("j", match, value, negated: negated))
                }
            }
        }
        // A leaf without a key judges presence alone.
        sets.append(RuleSet(json: ["OR": [["AND": [["OR_WHEN": [["matching": ["match_type": "doesNotExist", "negated": false]]]]]]]]))
        sets.append(RuleSet(json: ["OR": [["AND": [["OR_WHEN": [["matching": ["match_type": "exists", "negated": true]]]]]]]]))
        let program = RuleProgram([Array(sets.prefix(sets.count / 2)), Array(sets.dropFirst(sets.count / 2))])
        #expect(program.count == sets.count)
        var checked = 0
        for data in Self.dataSets {
            let input = program.input(data)
            for (index, set) in sets.enumerated() {
                let expected = set?.matches(data) ?? false
                let answer = program.matches(index, input)
                #expect(answer == expected, "set \(index) \(String(describing: set?.json)) data \(data)")
                checked += 1
            }
        }
        #expect(checked == sets.count * Self.dataSets.count)
    }

    @Test func randomTreesAgree() {
        var random = SplitMix64(seed: 0x5EED)
        let keys = ["k", "j", "location", "feature", "browser"]
        let matches = ["equals", "equalsNumber", "matches", "less", "lessEqual", "contains", "exists", "doesNotExist", "isIn"]
        let targets: [JSONValue] = ["pricing", "PRICING", "abc", "3", 3, 5, "5", true, "a|pricing", "straße"]
        func leaf() -> JSONValue {
            var fields: [String: JSONValue] = [
                "rule_type": "generic_key_value",
                "matching": ["match_type": .string(matches[random.below(matches.count)]), "negated": .bool(random.below(2) == 0)],
                "value": targets[random.below(targets.count)],
            ]
            if random.below(10) > 0 { fields["key"] = .string(keys[random.below(keys.count)]) }
            return .object(fields)
        }
        func tree() -> RuleSet {
            let blocks: [JSONValue] = (0..<random.below(3)).map { _ in
                ["AND": .array((0..<(1 + random.below(3))).map { _ in
                    ["OR_WHEN": .array((0..<random.below(4)).map { _ in leaf() })]
                })]
            }
            return RuleSet(json: ["OR": .array(blocks)])
        }
        let sets: [RuleSet?] = (0..<300).map { _ in tree() }
        let program = RuleProgram([sets])
        let values: [JSONValue] = ["pricing", "Pricing", "3", 3, 4.5, "x", true, .null, "straße", ["a"]]
        var disagreements = 0, matched = 0
        for _ in 0..<200 {
            var data: [String: JSONValue] = [:]
            for key in keys where random.below(3) > 0 { data[key] = values[random.below(values.count)] }
            let input = program.input(data)
            for (index, set) in sets.enumerated() {
                let expected = set!.matches(data)
                if expected { matched += 1 }
                if program.matches(index, input) != expected { disagreements += 1 }
            }
        }
        #expect(disagreements == 0)
        // The sample exercises both answers.
        #expect(matched > 1000 && matched < 59_000)
    }

    @Test func matchEachGivesEachSetsAnswerAsBits() {
        // 70 sets: past 64, positions have no bit but still count for `any`.
        var sets: [RuleSet?] = (0..<69).map { rule("k", "equals", .string("v\($0)")) }
        sets.append(rule("k", "equals", "last"))
        let program = RuleProgram([sets])
        let indexes = Array(sets.indices)
        for value in ["v0", "v5", "v63", "v64", "last", "none"] {
            var memo = RuleMemo()
            let (matched, unmatched, any) = program.matchEach(indexes, { program.input(["k": .string(value)]) },
                                                              memo: &memo)
            var expectMatched: UInt64 = 0, expectUnmatched: UInt64 = 0, expectAny = false
            for (position, set) in sets.enumerated() {
                let holds = set!.matches(["k": .string(value)])
                expectAny = expectAny || holds
                guard position < 64 else { continue }
                if holds { expectMatched |= 1 << UInt64(position) } else { expectUnmatched |= 1 << UInt64(position) }
            }
            #expect(matched == expectMatched && unmatched == expectUnmatched && any == expectAny, "\(value)")
        }
        var memo = RuleMemo()
        let beyond = program.matchEach(indexes, { program.input(["k": "last"]) }, memo: &memo)
        #expect(beyond.matched == 0 && beyond.any)
    }

    @Test func matchEachRemembersAnswersForTheSameInput() {
        var sets: [RuleSet?] = (0..<69).map { rule("k", "equals", .string("v\($0)")) }
        sets.append(rule("k", "equals", "last"))
        let program = RuleProgram([sets])
        var memo = RuleMemo(), reads = 0
        func input() -> RuleInput {
            reads += 1
            return program.input(["k": "v3"])
        }
        let first = program.matchEach([1, 3, 5], input, memo: &memo)
        #expect(reads == 1 && first.matched == 0b010 && first.unmatched == 0b101 && first.any)
        #expect(memo.answer(3) == true && memo.answer(5) == false && memo.answer(7) == nil)
        // Known sets, in another order: answered from the memo without reading the input.
        let again = program.matchEach([5, 3], input, memo: &memo)
        #expect(reads == 1 && again.matched == 0b10 && again.unmatched == 0b01)
        // One unknown set reads the input once more; sets past 63 are never remembered.
        _ = program.matchEach([3, 7], input, memo: &memo)
        #expect(reads == 2 && memo.answer(7) == false)
        _ = program.matchEach([69], input, memo: &memo)
        _ = program.matchEach([69], input, memo: &memo)
        #expect(reads == 4 && memo.answer(69) == nil)
    }

    @Test func mutualExclusionSetsAskTheResolver() {
        let exclusion = RuleSet(json: ["OR": [["AND": [["OR_WHEN": [
            ["rule_type": "bucketed_into_experience_key", "value": "other",
             "matching": ["match_type": "equals", "negated": false]],
        ]]]]]])
        let program = RuleProgram([[exclusion, rule("k", "equals", "a")]])
        let input = program.input(["k": "A"])
        let bucketed = program.matches(0, input, membership: { $0 == "other" ? true : nil })
        let notBucketed = program.matches(0, input, membership: { _ in false })
        let plain = program.matches(1, input)
        #expect(bucketed && !notBucketed && plain)
    }

    @Test func fixtureRulesAgree() throws {
        let data = try #require(try fixtureJSON("rules-test-config")["data"])
        var sets: [RuleSet?] = []
        for collection in ["audiences", "goals", "segments", "locations"] {
            for entity in data[collection]?.arrayValue ?? [] { sets.append(entity["rules"].map(RuleSet.init(json:))) }
        }
        #expect(sets.count > 3)
        let program = RuleProgram([sets])
        let samples: [[String: JSONValue]] = [
            ["varName1": "value1", "varName2": "VALUE2"], ["varName3": "something"], ["pages_visited_count": 2],
            ["visit_duration": "11"], ["country": "us", "browser_name": "Chrome"], ["enabled": true], ["enabled": "true"],
            ["country": "GB", "browser_name": "chrome"], [:],
        ]
        for sample in samples {
            let input = program.input(sample)
            for (index, set) in sets.enumerated() {
                let answer = program.matches(index, input)
                #expect(answer == (set?.matches(sample) ?? false), "set \(index) data \(sample)")
            }
        }
    }
}

/// The key index finds each key's position, the first of equal keys, and nothing else.
@Suite struct KeyIndexTests {
    @Test func findsFirstPositionsOnly() {
        let keys = (0..<200).map { "key-\($0 % 150)" }  // keys 0–49 twice
        let index = KeyIndex<FNV1a>(keys)
        for (position, key) in keys.enumerated() {
            #expect(index.position(of: key) == position % 150, "\(key)")
        }
        #expect(index.position(of: "key-150") == nil)
        #expect(index.position(of: "") == nil)
        #expect(KeyIndex<FNV1a>([]).position(of: "a") == nil)
    }

    /// The published FNV-1a 64 values, for small, large and non-ASCII strings alike.
    @Test func hashesAsFNV1a() {
        #expect(FNV1a.hash("") == 0xcbf2_9ce4_8422_2325)
        #expect(FNV1a.hash("a") == 0xaf63_dc4c_8601_ec8c)
        #expect(FNV1a.hash("location") == 0x8f90_406e_9a94_abe6)
        #expect(FNV1a.hash("clé-über-long-key-with-more-than-fifteen-bytes") == 0xd86b_50a1_f486_8a91)
        // A substring's copy and a string built piece by piece hash as the literal does.
        let built = ["clé-über", "-long-key-with-more-than-fifteen-bytes"].joined()
        #expect(FNV1a.hash(String("xlocationx".dropFirst().dropLast())) == FNV1a.hash("location"))
        #expect(FNV1a.hash(built) == 0xd86b_50a1_f486_8a91)
    }
}
