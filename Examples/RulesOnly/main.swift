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

let usage = """
usage: rules-only [RULE_JSON DATA_JSON]
       rules-only --help | --version

Evaluates a Convert rule tree against visitor data with the rule engine alone and prints
whether it matched and which leaf decided. Without arguments, a sample rule against a few
sample visitors.
"""
// The SDK's version (ConvertAgent.version), written out because this example depends on
// ConvertRules alone; the CLI tests hold the two equal.
let version = "1.0.0"

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments == ["--help"] || arguments == ["-h"] {
    print(usage)
    exit(0)
}
if arguments == ["--version"] {
    print("rules-only \(version)")
    exit(0)
}
// JSON never starts with "--", so such an argument can only be a mistyped option.
if let option = arguments.first(where: { $0.hasPrefix("--") }) {
    FileHandle.standardError.write(Data("rules-only: unknown option \(option)\n\(usage)\n".utf8))
    exit(2)
}
guard arguments.isEmpty || arguments.count == 2 else {
    FileHandle.standardError.write(Data("rules-only: give both RULE_JSON and DATA_JSON, or neither\n\(usage)\n".utf8))
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
