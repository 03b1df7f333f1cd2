import ConvertBucketing
import ConvertSwiftSDK

/// What a config that loads will do wrong at run time: rules that can never match and
/// experiences that can bucket no visitor. Decoding accepts both silently (an unknown operator
/// is a leaf that never holds, a non-numeric allocation is NaN, as in the JavaScript SDK), so
/// `validate` states the consequence.
struct ConfigProblem {
    /// The config path of the element at fault, spelled as degradation paths are.
    let path: String
    /// What will happen, and why.
    let message: String
}

enum ConfigProblems {
    /// Every problem of `config`, whose source document (the decoded one, unwrapped) is `document`.
    static func find(in config: ProjectConfig, document: JSONValue) -> [ConfigProblem] {
        var problems: [ConfigProblem] = []
        let index = SourceIndex(document)

        /// Rules of one entity: a problem per inert leaf, or one for the whole entity when it can never match.
        func check(_ rules: RuleSet?, collection: String, id: String, noun: String, name: String?, never: String) -> Bool {
            guard let rules else { return false }
            let inert = rules.inertLeaves
            guard !inert.isEmpty else { return false }
            let base = index.path(collection, id: id)
            let label = "\(noun) \(name ?? id)\(name == nil ? "" : " (id \(id))")"
            if rules.canNeverMatch {
                let reasons = inert.map { "\($0): \(why(rules[$0]))" }.joined(separator: "; ")
                problems.append(ConfigProblem(path: base + ".rules", message: "\(label) \(never): \(reasons)"))
                return true
            }
            for location in inert {
                problems.append(ConfigProblem(path: base + ".rules.\(location)",
                                              message: "a rule of \(label) never holds: \(why(rules[location]))"))
            }
            return false
        }

        var deadAudiences: Set<String> = []
        for audience in config.audiences where check(audience.rules, collection: "audiences", id: audience.id, noun: "audience",
                                                     name: audience.key ?? audience.name, never: "can never match") {
            deadAudiences.insert(audience.id)
        }
        var deadLocations: Set<String> = []
        for location in config.locations where check(location.rules, collection: "locations", id: location.id, noun: "location",
                                                     name: location.key ?? location.name, never: "can never match") {
            deadLocations.insert(location.id)
        }
        for segment in config.segments {
            _ = check(segment.rules, collection: "segments", id: segment.id, noun: "segment", name: segment.key ?? segment.name,
                      never: "can never match")
        }
        for goal in config.goals {
            _ = check(goal.rules, collection: "goals", id: goal.id, noun: "goal", name: goal.key,
                      never: "can never convert a visitor whose data is checked against its rules")
        }

        for experience in config.experiences {
            let path = index.path("experiences", id: experience.id)
            let label = "experience \(experience.key)"
            if let reason = gate(experience.audienceIds, matching: experience.audienceMatching, dead: deadAudiences, noun: "audience",
                                 name: { config.audience(id: $0)?.key }) {
                problems.append(ConfigProblem(path: path + ".audiences", message: "\(label) can bucket no visitor: \(reason)"))
                continue
            }
            if let reason = gate(experience.locationIds, matching: experience.locationMatching, dead: deadLocations, noun: "location",
                                 name: { config.location(id: $0)?.key }) {
                problems.append(ConfigProblem(path: path + ".locations", message: "\(label) can bucket no visitor: \(reason)"))
                continue
            }
            if let siteArea = experience.siteArea, siteArea.canNeverMatch {
                problems.append(ConfigProblem(path: path + ".site_area",
                                              message: "\(label) can bucket no visitor: its site_area rules can never match"))
                continue
            }
            problems += traffic(experience, path: path, index: index)
        }
        return problems
    }

    /// Why an experience's audiences (or locations) can let nobody in, if they cannot.
    private static func gate(_ ids: [String], matching: MatchingOption, dead: Set<String>, noun: String,
                             name: (String) -> String?) -> String? {
        let deadIds = ids.filter(dead.contains)
        guard !deadIds.isEmpty else { return nil }
        let list = deadIds.map { id in name(id).map { "\($0) (id \(id))" } ?? id }.joined(separator: ", ")
        switch matching {
        case .all: return "it needs every \(noun), and \(noun) \(list) can never match"
        case .any where deadIds.count == ids.count: return "\(noun) \(list) can never match"
        case .any: return nil
        }
    }

    /// Variations whose traffic can never be reached, or the whole experience when none can.
    private static func traffic(_ experience: Experience, path: String, index: SourceIndex) -> [ConfigProblem] {
        let active = experience.variations.filter { $0.isActive && !$0.id.isEmpty }
        guard !active.isEmpty else { return [] }
        let reachable = Set(experience.bucketTable.ranges.filter { $0.lower < $0.upper }.map(\.variationId))
        let notNumbers = active.filter { $0.trafficAllocation?.isNaN == true }
        let cause = notNumbers.isEmpty ? "" : ": traffic_allocation of "
            + notNumbers.map { $0.keyOrId }.joined(separator: ", ")
            + " is not a number (read as NaN, which also shuts out the variations after it in bucketing order)"
        guard !reachable.isEmpty else {
            let why = cause.isEmpty ? ": no variation has a traffic_allocation above 0" : cause
            return [ConfigProblem(path: path + ".variations", message: "experience \(experience.key) can bucket no visitor\(why)")]
        }
        guard !notNumbers.isEmpty else { return [] }
        let names = notNumbers.map(\.keyOrId).joined(separator: ", ")
        return active.filter { !reachable.contains($0.id) && ($0.trafficAllocation.map { $0.isNaN || $0 > 0 } ?? true) }.map { variation in
            let why = variation.trafficAllocation?.isNaN == true
                ? "its traffic_allocation is not a number (read as NaN)"
                : "the traffic_allocation of \(names), before it in bucketing order, is not a number (read as NaN)"
            return ConfigProblem(path: index.path("variations", id: variation.id, in: path),
                                 message: "variation \(variation.keyOrId) of experience \(experience.key) can never be shown: \(why)")
        }
    }

    private static func why(_ leaf: RuleLeaf?) -> String {
        guard let leaf else { return "the rule is malformed" }
        if let invalid = leaf.invalidReason { return "the rule is malformed (\(invalid))" }
        return "match_type \"\(leaf.matchTypeName ?? "")\" is not an operator the SDK knows"
    }
}

/// Finds an element's index in the source document by its id, since decoding may drop elements
/// and so shift the decoded arrays' indexes.
private struct SourceIndex {
    let document: JSONValue

    init(_ document: JSONValue) { self.document = document }

    /// `collection[n]` for the element whose `id` is `id` (under `parent`'s value when given).
    func path(_ collection: String, id: String, in parent: String? = nil) -> String {
        let prefix = parent.map { $0 + "." } ?? ""
        guard let elements = container(parent)?[collection]?.arrayValue,
              let at = elements.firstIndex(where: { $0.objectValue?["id"].map(\.javaScriptString) == id }) else {
            return prefix + collection
        }
        return "\(prefix)\(collection)[\(at)]"
    }

    /// The object at `path` (`name[n]` steps joined by `.`), the document itself for `nil`.
    private func container(_ path: String?) -> [String: JSONValue]? {
        var value = document
        for step in (path ?? "").split(separator: ".") {
            guard let open = step.firstIndex(of: "["), let close = step.firstIndex(of: "]"),
                  let at = Int(step[step.index(after: open)..<close]),
                  let array = value.objectValue?[String(step[..<open])]?.arrayValue, array.indices.contains(at) else { return nil }
            value = array[at]
        }
        return value.objectValue
    }
}
