// The rule engine on its own: this example depends on ConvertRules and nothing else.
//
//   swift run rules-only
//   swift run rules-only '<rule JSON>' '<data JSON>'
import ConvertRules
import Foundation

let sampleRule = """
{"OR": [{"AND": [
  {"OR_WHEN": [{"rule_type": "generic_key_value", "key": "country", "value": "US|CA",
                "matching": {"match_type": "isIn", "negated": false}}]},
  {"OR_WHEN": [{"rule_type": "generic_key_value", "key": "age", "value": 18,
                "matching": {"match_type": "less", "negated": true}}]}
]}]}
"""
let samples = [
    #"{"country": "us", "age": "21"}"#,
    #"{"country": "US", "age": 30}"#,
    #"{"country": "ca", "age": 17}"#,
    #"{"age": 40}"#,
]

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.isEmpty || arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: rules-only [RULE_JSON DATA_JSON]\n".utf8))
    exit(2)
}

func parse(_ text: String, _ what: String) -> JSONValue {
    do throws(JSONParseError) {
        return try JSONParser.parse(Array(text.utf8))
    } catch {
        FileHandle.standardError.write(Data("rules-only: the \(what) is \(error)\n".utf8))
        exit(2)
    }
}

let rules = RuleSet(json: parse(arguments.first ?? sampleRule, "rule"))
for leaf in rules.leaves where leaf.invalidReason != nil {
    print("note: a leaf is malformed and never matches: \(leaf.invalidReason!)")
}
for text in arguments.count == 2 ? [arguments[1]] : samples {
    guard case .object(let data) = parse(text, "data") else {
        FileHandle.standardError.write(Data("rules-only: the data must be a JSON object\n".utf8))
        exit(2)
    }
    let outcome = rules.evaluate(data)
    let decided = outcome.decidingLeaf.map { "decided by \($0) (\(outcome.verdict.map { "\($0)" } ?? "-"))" } ?? "no leaf reached"
    print("\(text)  ->  \(outcome.matched ? "match" : "no match"), \(decided)")
}
