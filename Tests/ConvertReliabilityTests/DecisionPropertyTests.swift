import ConvertModel
import ConvertRules
import ConvertSwiftSDK
import ConvertTesting
import Foundation
import Testing

/// Random configs in Convert's shape, built from the loosely typed values real and hostile configs
/// hold (numeric strings, NaN weights, falsy statuses, odd environments, ECMAScript patterns).
private struct ConfigGenerator {
    var random: SeededGenerator

    mutating func pick<T>(_ values: [T]) -> T { values[Int.random(in: 0..<values.count, using: &random)] }
    mutating func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &random) < percent }

    let allocations: [JSONValue?] = [nil, .null, "", 0, -1, "25", true, false, [30], "lots", [:], 50, 33.3, 1e308, "Infinity", "0x20"]
    let statuses: [JSONValue?] = [nil, .null, "", false, 0, "running", "Running", "paused", true, 1]
    let versions: [JSONValue?] = [nil, .null, 8, 11, 12, "12", [12], "Infinity", "abc", true, 12.5]
    let environments: [JSONValue?] = [nil, .null, "", "staging", "production", 0, false]
    let matching: [JSONValue?] = [nil, .null, "any", "all", "weird", 3]
    let operators: [JSONValue] = ["equals", "equalsNumber", "matches", "less", "lessEqual", "contains", "startsWith",
                                  "endsWith", "isIn", "regexMatches", "exists", "doesNotExist", "not_exists", "fuzzy", 7]
    let ruleValues: [JSONValue?] = [nil, .null, "", " ", "FF", "ff", "ΣΑΣ", "30", 30, "1,000", true, ["a", "b"], "a|b",
                                    "^f.*$", "(unclosed", "{", "\\k<a>", "\\1(a)", "[[:alpha:]]", "x++", "(?i)ff", "\u{FEFF}"]
    let keys = ["browser", "country", "desktop", "plan", "customSegments", "location", "age", "missing"]
    let visitorValues: [JSONValue] = ["FF", "ch", "30", 30, "", .null, true, ["a", "b"], ["x": 1], "σας", "\u{2028}", "1,000"]

    mutating func rules() -> JSONValue {
        if chance(10) { return .null }
        func leaf(_ g: inout ConfigGenerator) -> JSONValue {
            var matching: [String: JSONValue] = ["match_type": g.pick(g.operators), "negated": g.chance(90) ? .bool(g.chance(50)) : "yes"]
            if g.chance(5) { matching["match_type"] = nil }
            var fields: [String: JSONValue] = ["rule_type": g.chance(10) ? "brand_new" : "generic_key_value",
                                               "key": .string(g.pick(g.keys)), "matching": .object(matching)]
            if let value = g.pick(g.ruleValues) { fields["value"] = value }
            if g.chance(5) { fields = ["rule_type": "bucketed_into_experience_key", "value": .string("e\(Int.random(in: 0..<5, using: &g.random))"),
                                       "matching": ["match_type": "equals", "negated": .bool(g.chance(50))]] }
            return .object(fields)
        }
        let blocks = (0..<Int.random(in: 0...2, using: &random)).map { _ -> JSONValue in
            ["AND": .array((0..<Int.random(in: 0...2, using: &random)).map { _ -> JSONValue in
                ["OR_WHEN": .array((0..<Int.random(in: 0...3, using: &random)).map { _ in leaf(&self) })]
            })]
        }
        return ["OR": .array(blocks)]
    }

    mutating func set(_ fields: inout [String: JSONValue], _ key: String, _ value: JSONValue?) {
        if let value { fields[key] = value }
    }

    mutating func config() -> JSONValue {
        let audiences = (0..<3).map { i -> JSONValue in
            ["id": .string("a\(i)"), "key": .string("audience-\(i)"), "type": pick(["permanent", "transient", "x"]), "rules": rules()]
        }
        let segments = (0..<2).map { i -> JSONValue in ["id": .string("s\(i)"), "key": .string("segment-\(i)"), "rules": rules()] }
        let locations = (0..<3).map { i -> JSONValue in ["id": .string("l\(i)"), "key": .string("location-\(i)"), "rules": rules()] }
        let experiences = (0..<Int.random(in: 1...4, using: &random)).map { i -> JSONValue in
            var fields: [String: JSONValue] = ["id": .string("\(100 + i)"), "key": .string("e\(i)")]
            set(&fields, "version", pick(versions))
            set(&fields, "environment", pick(environments))
            fields["locations"] = .array((0..<Int.random(in: 0...2, using: &random)).map { _ in .string(pick(["l0", "l1", "l2", "l9"])) })
            if chance(30) { fields["site_area"] = rules() }
            fields["audiences"] = .array((0..<Int.random(in: 0...3, using: &random)).map { _ in .string(pick(["a0", "a1", "a2", "s0", "s1", "zz"])) })
            var options: [String: JSONValue] = [:]
            set(&options, "audiences", pick(matching))
            set(&options, "locations", pick(matching))
            if chance(80) { fields["settings"] = ["matching_options": .object(options)] }
            fields["variations"] = .array((0..<Int.random(in: 0...4, using: &random)).map { v -> JSONValue in
                var variation: [String: JSONValue] = ["id": pick([.string("\(1000 + i * 10 + v)"), .string("v\(v)"), "", "7"]),
                                                      "key": .string("e\(i)-v\(v)")]
                set(&variation, "status", pick(statuses))
                set(&variation, "traffic_allocation", pick(allocations))
                if chance(50) {
                    variation["changes"] = [["type": "fullStackFeature", "data": [
                        "feature_id": pick(["f0", 9, "f1"]),
                        "variables_data": ["n": pick(["Infinity", "1e400", 3, "x", true]), "j": pick(["{\"a\":1}", "1e400", [1], .null])],
                    ]]]
                }
                return .object(variation)
            })
            return .object(fields)
        }
        let features: JSONValue = [
            ["id": "f0", "key": "feature-0", "variables": [["key": "n", "type": "float"], ["key": "j", "type": "json"]]],
            ["id": "9", "key": "feature-9", "variables": [["key": "n", "type": "integer"], ["key": "j", "type": "boolean"]]],
        ]
        return ["account_id": "1", "project": ["id": "2"], "experiences": .array(experiences), "audiences": .array(audiences),
                "segments": .array(segments), "locations": .array(locations), "features": features,
                "goals": [["id": "g0", "key": "goal-0", "rules": rules()]], "archived_experiences": chance(20) ? ["101"] : []]
    }

    mutating func attributes() -> [String: JSONValue] {
        var out: [String: JSONValue] = [:]
        for key in keys where chance(50) { out[key] = pick(visitorValues) }
        if chance(30) { out["customSegments"] = pick([["s0"], ["s1", "s0"], "s1", []]) }
        return out
    }
}

@Suite struct DecisionPropertyTests {
    /// Decides every experience and feature, explains each experience, converts a goal; checks
    /// that what comes back belongs to the config and that a repeat is sticky.
    private func exercise(_ data: Data, _ generator: inout ConfigGenerator, environment: String?) async throws {
        let harness = TestSDK(data: data, configuration: ConvertConfiguration(sdkKey: "k", environment: environment))
        try await harness.sdk.ready(timeout: .patience)
        let config = try #require(harness.sdk.config)
        for v in 0..<6 {
            let context = harness.sdk.createContext(visitorId: "p-\(v)", attributes: generator.attributes())
            context.setLocationProperties(["location": generator.pick(generator.visitorValues), "browser": "FF"])
            let first = await context.runExperiences()
            for decided in first {
                let experience = try #require(config.experience(key: decided.experienceKey))
                #expect(experience.variation(id: decided.id) != nil)
            }
            // Transient audiences are checked again and mutual-exclusion leaves see the new
            // decisions, so an experience may drop out; one that stays keeps its variation.
            let again = await context.runExperiences()
            for decided in again {
                if let earlier = first.first(where: { $0.experienceKey == decided.experienceKey }) {
                    #expect(decided.id == earlier.id, "decisions are sticky")
                }
            }
            for experience in config.experiences {
                let trace = await context.explainExperience(experience.key)
                let decided = again.first { $0.experienceKey == experience.key }
                #expect(trace.variationId == decided?.id, "explain agrees with the decision")
            }
            for feature in await context.runFeatures() { _ = feature.variables }
            _ = await context.trackConversion("goal-0", ruleData: generator.attributes())
        }
    }

    @Test func anyGeneratedConfigTheDecoderAcceptsDecidesWithoutACrash() async throws {
        var generator = ConfigGenerator(random: SeededGenerator(seed: 12))
        var decided = 0
        for _ in 0..<400 {
            let json = generator.config()
            let data = Data(ConfigMutator.encode(json).utf8)
            guard (try? ConfigDecoder.decode(data)) != nil else { continue }
            try await exercise(data, &generator, environment: generator.pick([nil, "staging", "production"]))
            decided += 1
        }
        #expect(decided == 400, "the generated configs are all well-formed documents")
    }

    @Test func anyMutatedFixtureTheDecoderAcceptsDecidesWithoutACrash() async throws {
        var generator = ConfigGenerator(random: SeededGenerator(seed: 13))
        var mutator = ConfigMutator(seed: 14)
        var decided = 0
        for file in Fixtures.File.configs {
            let original = [UInt8](try Fixtures.data(file))
            for _ in 0..<25 {
                let data = Data(mutator.mutate(original))
                guard (try? ConfigDecoder.decode(data)) != nil else { continue }
                try await exercise(data, &generator, environment: nil)
                decided += 1
            }
        }
        #expect(decided > 20)
    }
}
