/// One condition of a rule tree: compare the visitor value under `key` with `value`.
///
/// A leaf always decodes; one that is malformed (no `matching`, a non-string `match_type`, a
/// non-boolean `negated`, or no `value` for an operator that needs one) is kept with
/// ``invalidReason`` set and evaluates to `false`.
public struct RuleLeaf: Sendable {
    /// The leaf's content in one immutable box, so walking a rule tree retains once per leaf.
    final class Storage: Sendable {
        let ruleType: String?
        let key: String?
        let value: JSONValue?
        let matchTypeName: String?
        let matchType: MatchType?
        let negated: Bool
        let invalidReason: String?
        let prepared: PreparedValue
        /// `prepared` unpacked for the fast path.
        let lowered: String?
        let ordered: PreparedValue.Comparable?

        init(ruleType: String?, key: String?, value: JSONValue?, matchTypeName: String?, negated: Bool,
             invalidReason: String?) {
            self.ruleType = ruleType
            self.key = key
            self.value = value
            self.matchTypeName = matchTypeName
            let matchType = matchTypeName.flatMap(MatchType.init(rawValue:))
            self.matchType = matchType
            self.negated = negated
            self.invalidReason = invalidReason
            if invalidReason == nil, let matchType, let value {
                prepared = PreparedValue(matchType: matchType, value: value)
            } else {
                prepared = .none
            }
            switch prepared {
            case .lowered(let text): (lowered, ordered) = (text, nil)
            case .ordered(let value): (lowered, ordered) = (nil, value)
            default: (lowered, ordered) = (nil, nil)
            }
        }
    }

    let storage: Storage

    /// `rule_type` as written; unknown types evaluate by `key` like any other leaf.
    package var ruleType: String? { storage.ruleType }
    /// The data key the leaf reads (case-sensitive).
    public var key: String? { storage.key }
    /// The rule value, `nil` when the JSON had none (`null` is kept as ``JSONValue/null``).
    public var value: JSONValue? { storage.value }
    /// `match_type` as written.
    package var matchTypeName: String? { storage.matchTypeName }
    /// The parsed operator, `nil` for an unknown `match_type`.
    package var matchType: MatchType? { storage.matchType }
    /// `matching.negated`.
    public var negated: Bool { storage.negated }
    /// Why the leaf is malformed, `nil` for a well-formed one.
    public var invalidReason: String? { storage.invalidReason }
    var prepared: PreparedValue { storage.prepared }

    /// Whether this is a mutual-exclusion leaf (`bucketed_into_experience_key`).
    package var isExperienceMembership: Bool { ruleType == bucketedIntoExperienceKeyRuleType }

    /// Builds a leaf from its JSON object; never fails.
    package init(json: JSONValue) {
        self.init(reading: json)
    }

    /// Builds a leaf from its JSON object, a ``JSONValue`` or a value of a parsed document.
    init<Value: JSONDocumentValue>(reading document: Value) {
        guard document.jsonKind == .object else {
            self.init(ruleType: nil, key: nil, value: nil, matchTypeName: nil, negated: false,
                      invalidReason: "leaf is not an object")
            return
        }
        let ruleType = document.member("rule_type")?.stringValue
        let key = document.member("key")?.stringValue
        let value = document.member("value")?.json
        guard let matching = document.member("matching"), matching.jsonKind == .object else {
            self.init(ruleType: ruleType, key: key, value: value, matchTypeName: nil, negated: false,
                      invalidReason: "missing matching object")
            return
        }
        guard let matchName = matching.member("match_type")?.stringValue else {
            self.init(ruleType: ruleType, key: key, value: value, matchTypeName: nil, negated: false,
                      invalidReason: "match_type is not a string")
            return
        }
        guard let negated = matching.member("negated")?.boolValue else {
            self.init(ruleType: ruleType, key: key, value: value, matchTypeName: matchName, negated: false,
                      invalidReason: "negated is not a boolean")
            return
        }
        let needsValue = !(MatchType(rawValue: matchName)?.judgesPresence ?? false)
        let reason = (needsValue && value == nil) ? "no value for match_type \(matchName)" : nil
        self.init(ruleType: ruleType, key: key, value: value, matchTypeName: matchName, negated: negated,
                  invalidReason: reason)
    }

    /// Builds a well-formed leaf directly.
    ///
    /// ```swift
    /// let leaf = RuleLeaf(key: "age", matchType: .less, value: 30, negated: true)   // age >= 30
    /// ```
    package init(ruleType: String? = "generic_key_value", key: String?, matchType: MatchType,
                value: JSONValue?, negated: Bool = false) {
        let reason = (!matchType.judgesPresence && value == nil) ? "no value for match_type \(matchType.rawValue)" : nil
        self.init(ruleType: ruleType, key: key, value: value, matchTypeName: matchType.rawValue,
                  negated: negated, invalidReason: reason)
    }

    private init(ruleType: String?, key: String?, value: JSONValue?, matchTypeName: String?, negated: Bool,
                 invalidReason: String?) {
        storage = Storage(ruleType: ruleType, key: key, value: value, matchTypeName: matchTypeName, negated: negated,
                          invalidReason: invalidReason)
    }

    /// The leaf as Convert's rule JSON.
    package var json: JSONValue {
        var fields: [String: JSONValue] = [:]
        if let ruleType { fields["rule_type"] = .string(ruleType) }
        if let key { fields["key"] = .string(key) }
        if let value { fields["value"] = value }
        var matching: [String: JSONValue] = ["negated": .bool(negated)]
        if let matchTypeName { matching["match_type"] = .string(matchTypeName) }
        fields["matching"] = .object(matching)
        return .object(fields)
    }
}

extension RuleLeaf: Hashable {
    public static func == (lhs: RuleLeaf, rhs: RuleLeaf) -> Bool {
        lhs.storage === rhs.storage || lhs.ruleType == rhs.ruleType && lhs.key == rhs.key && lhs.value == rhs.value
            && lhs.matchTypeName == rhs.matchTypeName && lhs.negated == rhs.negated
            && lhs.invalidReason == rhs.invalidReason
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ruleType)
        hasher.combine(key)
        hasher.combine(value)
        hasher.combine(matchTypeName)
        hasher.combine(negated)
    }
}

/// The rule value in the form its operator needs, computed once when the leaf is built.
enum PreparedValue: Sendable {
    case none
    case lowered(String)
    case ordered(Comparable)
    case candidates(Set<String>)
    case pattern(ECMAScriptRegex?)

    /// A value as `less`/`lessEqual` see it: JS compares two values of the same `typeof` only.
    enum Comparable: Sendable {
        case number(Double)
        case text(String)
        case boolean(Bool)
        case other
    }

    init(matchType: MatchType, value: JSONValue) {
        switch matchType {
        case .equals, .equalsNumber, .matches, .contains, .startsWith, .endsWith:
            self = .lowered(JavaScriptText.lowercased(value.javaScriptString))
        case .less, .lessEqual:
            self = .ordered(Comparable(value))
        case .isIn:
            switch value {
            case .string(let s):
                self = .candidates(Set(s.split(separator: "|", omittingEmptySubsequences: false).map { JavaScriptText.lowercased(String($0)) }))
            case .array(let elements):
                self = .candidates(Set(elements.map { JavaScriptText.lowercased($0.javaScriptString) }))
            default:
                self = .candidates([])
            }
        case .regexMatches:
            self = .pattern(ECMAScriptRegex(value.javaScriptString))
        case .exists, .notExists, .doesNotExist:
            self = .none
        }
    }
}

extension PreparedValue.Comparable {
    init(_ value: JSONValue) {
        switch value {
        case .number(let n): self = .number(n)
        case .bool(let b): self = .boolean(b)
        case .string(let s): self = JavaScriptNumber.parseNumeric(s).map { .number($0) } ?? .text(s)
        default: self = .other
        }
    }
}
