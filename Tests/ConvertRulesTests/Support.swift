import ConvertRules
import Foundation

/// A one-leaf rule set: `{"OR":[{"AND":[{"OR_WHEN":[leaf]}]}]}`.
func rule(_ key: String, _ match: String, _ value: JSONValue?, negated: Bool = false,
          type: String = "generic_key_value") -> RuleSet {
    var leaf: [String: JSONValue] = [
        "rule_type": .string(type), "key": .string(key),
        "matching": ["match_type": .string(match), "negated": .bool(negated)],
    ]
    if let value { leaf["value"] = value }
    return RuleSet(json: ["OR": [["AND": [["OR_WHEN": [.object(leaf)]]]]]])
}

/// Evaluates `key match value` against `data`, plain and negated.
func check(_ data: [String: JSONValue], _ key: String, _ match: String, _ value: JSONValue) -> (plain: Bool, negated: Bool) {
    (rule(key, match, value).matches(data), rule(key, match, value, negated: true).matches(data))
}

/// A fixture of the test kit, read from the source tree: this target depends on Rules alone, so it
/// reads the one copy the kit holds by path rather than through the kit's bundle.
func fixtureJSON(_ name: String) throws -> JSONValue {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../ConvertTesting/Fixtures/\(name).json").standardizedFileURL
    return try JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: url))
}

/// A small seeded generator (SplitMix64), so random cases are the same on every run and a
/// failing one can be replayed. The test kit has one too; this target depends on Rules alone.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<bound`.
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}

