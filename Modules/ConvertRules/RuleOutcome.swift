/// What one leaf evaluated to, and why.
public enum LeafVerdict: Sendable, Hashable {
    /// The operator ran and, after negation, held.
    case matched
    /// The operator ran and, after negation, did not hold.
    case notMatched
    /// The data has no value under the leaf's key (false, not negated).
    case missingKey
    /// The data map is empty (false).
    case emptyData
    /// The leaf is malformed (false); the reason says how.
    case invalidLeaf(String)
    /// `match_type` names no known operator (false, not negated).
    case unknownMatchType(String)
    /// `less`/`lessEqual` got a number and a non-number, or non-comparable values (false, not negated).
    case incomparable
    /// The regular expression does not compile (false, not negated).
    case invalidPattern

    /// Whether the leaf counts as matched.
    package var isMatch: Bool {
        if case .matched = self { return true }
        return false
    }
}

/// The result of evaluating a ``RuleSet``, with the leaf that decided it.
public struct RuleOutcome: Sendable, Hashable {
    /// Whether the rule set matched.
    public let matched: Bool
    /// The last leaf evaluated: for a match, the leaf that completed the matching OR block; for a
    /// miss, the first leaf evaluated whose `match_type` names no known operator, else the leaf
    /// that failed last. `nil` when no leaf was reached (empty rule set or block).
    public let decidingLeaf: RuleLocation?
    /// The verdict of ``decidingLeaf``.
    public let verdict: LeafVerdict?
    /// The experience key a mutual-exclusion leaf named that the resolver did not know; the leaf
    /// then counted the visitor as not bucketed there. Worth a warning: the config is inconsistent.
    package let unresolvedExperienceKey: String?

    /// An outcome; evaluation builds these, the initializer serves tests and adapters.
    package init(matched: Bool, decidingLeaf: RuleLocation?, verdict: LeafVerdict?, unresolvedExperienceKey: String? = nil) {
        self.matched = matched
        self.decidingLeaf = decidingLeaf
        self.verdict = verdict
        self.unresolvedExperienceKey = unresolvedExperienceKey
    }
}
