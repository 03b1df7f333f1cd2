/// The comparison a rule leaf applies (`matching.match_type` in Convert's rule JSON).
package enum MatchType: String, Sendable, CaseIterable {
    /// The visitor's value equals the rule's, compared as JavaScript strings, case-insensitively;
    /// an array contains it.
    case equals
    /// The same comparison as ``equals`` (the JavaScript SDK compares numbers as text too).
    case equalsNumber
    /// The same comparison as ``equals``: the name does not mean a pattern (``regexMatches`` does).
    case matches
    /// The visitor's value is less than the rule's: numbers (numeric strings included), strings or
    /// booleans, never mixed.
    case less
    /// The visitor's value is less than or equal to the rule's, compared as ``less`` compares.
    case lessEqual
    /// The visitor's value contains the rule's text, case-insensitively; a blank rule value always
    /// matches.
    case contains
    /// The visitor's value begins with the rule's text, case-insensitively.
    case startsWith
    /// The visitor's value ends with the rule's text, case-insensitively.
    case endsWith
    /// One of the visitor's `|`-separated values is one of the rule's (a `|`-separated string or an
    /// array).
    case isIn
    /// The lower-cased visitor value matches the rule's ECMAScript pattern (``ECMAScriptRegex``).
    case regexMatches
    /// The key is present with a value other than `null` or `""`.
    case exists
    /// The key's value is `null` or `""`; needs a rule value, and an absent key makes it false.
    case notExists = "not_exists"
    /// The key is absent, or its value is `null` or `""`.
    case doesNotExist

    /// Whether the operator judges presence itself: a leaf may omit `value`, and an absent key
    /// (or empty data) is evaluated as an undefined value instead of failing the leaf.
    /// `not_exists` is not one of them: it needs a `value`, and an absent key makes it false.
    package var judgesPresence: Bool {
        switch self {
        case .exists, .doesNotExist: return true
        default: return false
        }
    }

    /// A leaf's answer when the visitor has no value under its key: only a presence operator
    /// can hold then (`doesNotExist` unless negated, `exists` when negated).
    func holdsWhenAbsent(negated: Bool) -> Bool {
        judgesPresence && (self == .doesNotExist) != negated
    }
}

/// The `rule_type` that marks a mutual-exclusion leaf: "visitor is bucketed into experience `value`".
package let bucketedIntoExperienceKeyRuleType = "bucketed_into_experience_key"
