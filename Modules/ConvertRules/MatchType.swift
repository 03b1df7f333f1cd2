/// The comparison a rule leaf applies (`matching.match_type` in Convert's rule JSON).
public enum MatchType: String, Sendable, CaseIterable {
    case equals
    case equalsNumber
    case matches
    case less
    case lessEqual
    case contains
    case startsWith
    case endsWith
    case isIn
    case regexMatches
    case exists
    case notExists = "not_exists"
    case doesNotExist

    /// Whether the operator judges presence itself: a leaf may omit `value`, and an absent key
    /// (or empty data) is evaluated as an undefined value instead of failing the leaf.
    /// `not_exists` is not one of them: it needs a `value`, and an absent key makes it false.
    public var judgesPresence: Bool {
        switch self {
        case .exists, .doesNotExist: return true
        default: return false
        }
    }
}

/// The `rule_type` that marks a mutual-exclusion leaf: "visitor is bucketed into experience `value`".
public let bucketedIntoExperienceKeyRuleType = "bucketed_into_experience_key"
