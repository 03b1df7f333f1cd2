import ConvertBucketing
import ConvertSwiftSDK
import Foundation

/// `convert explain`: the check-by-check account of one decision.
enum ExplainCommand {
    static let help = """
    usage: convert explain --config FILE --visitor ID [--attributes JSON] [--location JSON]
                           (--experience KEY | --feature KEY) [--environment ENV] [--format text|json]

    Shows how the experience (or every experience carrying the feature) is decided for the
    visitor: filters, stored decision, each location and audience with the rule that decided
    it, segments, the bucket value and the arm ranges. Offline; nothing is stored or tracked.
    --format json (or --json) prints one JSON object instead.
    """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let args = try Arguments(arguments,
                                 options: ["config", "visitor", "attributes", "location", "experience", "feature", "environment",
                                           "format"],
                                 flags: ["json"])
        let json = try args.choice("format", of: ["text", "json"], default: args.flag("json") ? "json" : "text") == "json"
        let configPath = try args.required("config")
        let visitor = try args.required("visitor")
        let attributes = try Input.object(args.value("attributes"), for: "attributes")
        let location = try Input.object(args.value("location"), for: "location")
        let experienceKey = args.value("experience"), featureKey = args.value("feature")
        guard (experienceKey == nil) != (featureKey == nil) else {
            throw UsageError("give exactly one of --experience and --feature")
        }
        let sdk = try await Input.offlineSDK(configPath: configPath, environment: args.value("environment"))
        let config = sdk.config!
        let context = sdk.createContext(visitorId: visitor, attributes: attributes)
        context.setLocationProperties(location)

        var traces: [DecisionTrace] = []
        var feature: BucketedFeature?
        if let experienceKey {
            guard config.experience(key: experienceKey) != nil else {
                throw UsageError("--experience: no experience has the key \"\(experienceKey)\" "
                                 + "(known: \(config.experiences.map(\.key).joined(separator: ", ")))")
            }
            traces = [await context.explainExperience(experienceKey)]
        } else if let featureKey {
            guard config.feature(key: featureKey) != nil else {
                throw UsageError("--feature: no feature has the key \"\(featureKey)\" "
                                 + "(known: \(config.features.map(\.key).joined(separator: ", ")))")
            }
            traces = await context.explainFeature(featureKey)
            feature = await context.runFeature(featureKey, enableTracking: false)
        }
        let renderer = TraceRenderer(config: config)
        if json {
            var object: [String: JSONValue] = ["visitorId": .string(visitor), "decisions": .array(traces.map(renderer.json))]
            if let feature {
                object["feature"] = ["key": .string(feature.key), "status": .string(feature.status.rawValue),
                                     "variables": .object(feature.variables)]
            }
            print(Output.line(.object(object)))
        } else {
            for trace in traces { print(renderer.text(trace)) }
            if let feature {
                let via = feature.experienceKey.map { " via \($0) / \(feature.variationKey ?? feature.variationId ?? "")" } ?? ""
                print("feature \(feature.key): \(feature.status.rawValue)\(via)")
            }
            if traces.isEmpty, let featureKey { print("feature \(featureKey): no experience carries it") }
        }
        return 0
    }
}

/// Turns traces into text or JSON, naming the rule leaf that decided each check.
struct TraceRenderer {
    let config: ProjectConfig

    func text(_ trace: DecisionTrace) -> String {
        var lines = ["experience \(trace.experienceKey)\(trace.experienceId.map { " (id \($0))" } ?? "") for visitor \(trace.visitorId)"]
        for step in trace.steps { lines.append("  " + describe(step)) }
        let result = trace.variationId.map { "variation \(trace.variationKey ?? $0) (id \($0))" } ?? "no variation"
        lines.append("result: \(trace.reason.rawValue) -> \(result)")
        return lines.joined(separator: "\n")
    }

    func describe(_ step: DecisionStep) -> String {
        switch step {
        case .notReady: return "the config is not loaded"
        case .invalidVisitorId(let problem): return "visitor id not usable: \(problem)"
        case .experienceNotFound(let key): return "no experience has the key \"\(key)\""
        case .archived: return "archived"
        case .environmentMismatch(let experience, let sdk): return "runs in environment \"\(experience)\", not \"\(sdk)\""
        case .preview(let id): return "preview forces variation \(id)"
        case .forced(let id): return "a QA override forces variation \(id)"
        case .storedDecision(let id): return "stored decision: \(id ?? "none")"
        case .noKnownLocation: return "locations: none of the named ids exists in the config"
        case .location(let id, let key, let outcome):
            return "location \(key ?? id) (id \(id)): \(verdict(outcome, in: config.location(id: id)?.rules))"
        case .siteArea(let outcome):
            return "site area: \(verdict(outcome, in: nil))"
        case .audience(let id, let key, let permanent, let outcome):
            let kind = permanent ? "permanent" : "transient"
            guard let outcome else { return "audience \(key ?? id) (id \(id), \(kind)): skipped, already bucketed" }
            return "audience \(key ?? id) (id \(id), \(kind)): \(verdict(outcome, in: config.audience(id: id)?.rules))"
        case .segments(let required, let visitor, let matched):
            return "segments: needs one of [\(required.joined(separator: ", "))], visitor has [\(visitor.joined(separator: ", "))]: \(matched ? "match" : "no match")"
        case .bucket(let value, let ranges, let id):
            let arms = ranges.map { "\($0.variationId) [\(format($0.lower)), \(format($0.upper)))" }.joined(separator: ", ")
            return "bucket value \(value) in \(arms): \(id.map { "lands in \($0)" } ?? "no arm")"
        }
    }

    private func verdict(_ outcome: RuleOutcome, in rules: RuleSet?) -> String {
        var text = outcome.matched ? "match" : "no match"
        if let location = outcome.decidingLeaf {
            text += "; deciding rule \(location)"
            if let leaf = rules?[location] { text += " " + describe(leaf) }
            switch outcome.verdict {
            case .unknownMatchType(let name)?:
                text += " -> match_type \"\(name)\" is not an operator the SDK knows, so this rule never holds"
            case let verdict?: text += " -> \(verdict)"
            case nil: break
            }
        }
        return text
    }

    private func describe(_ leaf: RuleLeaf) -> String {
        let value = leaf.value.map { Output.line($0) } ?? "(none)"
        return "[\(leaf.ruleType ?? "rule")] \(leaf.key ?? "(no key)") \(leaf.negated ? "not " : "")\(leaf.matchTypeName ?? "?") \(value)"
    }

    private func format(_ value: Double) -> String {
        guard value.isFinite else { return "\(value)" }
        return value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(format: "%.2f", value)
    }

    func json(_ trace: DecisionTrace) -> JSONValue {
        [
            "experienceKey": .string(trace.experienceKey),
            "experienceId": trace.experienceId.map(JSONValue.string) ?? .null,
            "reason": .string(trace.reason.rawValue),
            "variationId": trace.variationId.map(JSONValue.string) ?? .null,
            "variationKey": trace.variationKey.map(JSONValue.string) ?? .null,
            "steps": .array(trace.steps.map { step in
                JSONValue.object(["description": .string(describe(step))]).merging(details(step))
            }),
        ]
    }

    private func details(_ step: DecisionStep) -> JSONValue {
        switch step {
        case .location(let id, _, let outcome): return ["check": "location", "id": .string(id), "matched": .bool(outcome.matched),
                                                       "decidingRule": rule(outcome)]
        case .audience(let id, _, let permanent, let outcome):
            return ["check": "audience", "id": .string(id), "permanent": .bool(permanent),
                    "matched": outcome.map { .bool($0.matched) } ?? .null, "decidingRule": outcome.map(rule) ?? .null]
        case .siteArea(let outcome): return ["check": "siteArea", "matched": .bool(outcome.matched), "decidingRule": rule(outcome)]
        case .bucket(let value, _, let id): return ["check": "bucket", "value": .number(Double(value)),
                                                    "variationId": id.map(JSONValue.string) ?? .null]
        case .storedDecision(let id): return ["check": "storedDecision", "variationId": id.map(JSONValue.string) ?? .null]
        case .segments(_, _, let matched): return ["check": "segments", "matched": .bool(matched)]
        default: return ["check": "filter"]
        }
    }

    private func rule(_ outcome: RuleOutcome) -> JSONValue {
        outcome.decidingLeaf.map { .string($0.description) } ?? .null
    }
}

extension JSONValue {
    func merging(_ other: JSONValue) -> JSONValue {
        guard case .object(let a) = self, case .object(let b) = other else { return self }
        return .object(a.merging(b) { _, new in new })
    }
}
