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

func fixtureJSON(_ name: String) throws -> JSONValue {
    guard let url = Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Fixtures") else {
        throw CocoaError(.fileNoSuchFile)
    }
    return try JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: url))
}
