import ConvertBucketing
import ConvertModel
import ConvertRules

/// One check made while deciding an experience, in the order it was made.
public enum DecisionStep: Sendable, Hashable {
    /// No config is installed yet.
    case notReady
    /// The context's visitor id cannot be used (``ConvertContext/visitorIdProblem``).
    case invalidVisitorId(problem: String)
    /// No experience has the requested key.
    case experienceNotFound(key: String)
    /// The experience is in `archived_experiences`.
    case archived
    /// The experience runs in another environment.
    case environmentMismatch(experience: String, sdk: String)
    /// A preview forced this variation; every gate was bypassed.
    case preview(variationId: String)
    /// A QA override forced this variation; every gate was bypassed.
    case forced(variationId: String)
    /// The visitor's stored decision, `nil` when there is none (or it names a variation that no longer exists).
    case storedDecision(variationId: String?)
    /// A location's rules against the location properties.
    case location(id: String, key: String?, outcome: RuleOutcome)
    /// The experience names locations, but none of those ids exists in the config.
    case noKnownLocation
    /// `site_area` rules against the location properties.
    case siteArea(outcome: RuleOutcome)
    /// An audience check; `outcome` is `nil` when a permanent audience was skipped for a bucketed visitor.
    case audience(id: String, key: String?, permanent: Bool, outcome: RuleOutcome?)
    /// Segment gating: the experience needs one of `required`, the visitor has `visitor`.
    case segments(required: [String], visitor: [String], matched: Bool)
    /// The bucket value and the arm ranges it was looked up in.
    case bucket(value: Int, ranges: [BucketTable.Range], variationId: String?)
}

/// Why a decision ended as it did.
public enum DecisionReason: String, Sendable, Hashable {
    /// Before the gates: no config yet, an unusable visitor id, an unknown key, an archived
    /// experience, another environment; or a variation forced by a preview or a QA override
    /// (``DecisionStep`` has the details).
    case notReady, invalidVisitorId, experienceNotFound, archived, environmentMismatch, preview, forced
    /// A gate kept the visitor out: no location (or site area) matched, the audiences did not, or
    /// the visitor lacks the experience's segments.
    case locationNotMatched, audienceNotMatched, segmentNotMatched
    /// Past the gates: the visitor's stored (sticky) variation, a fresh bucketing, or a bucket
    /// value outside every variation's traffic.
    case storedDecision, bucketed, notBucketed
}

/// The full account of one decision: each check, and the result.
///
/// ```swift
/// let trace = await context.explainExperience("checkout-test")
/// for step in trace.steps { print(step) }
/// ```
public struct DecisionTrace: Sendable, Hashable {
    /// The experience key asked for.
    public let experienceKey: String
    /// Its id, when the key names an experience.
    public let experienceId: String?
    /// The visitor decided for.
    public let visitorId: String
    /// Each check, in order.
    public let steps: [DecisionStep]
    /// Why the decision ended as it did.
    public let reason: DecisionReason
    /// The variation given, if any.
    public let variationId: String?
    /// Its key.
    public let variationKey: String?

    package init(experienceKey: String, experienceId: String?, visitorId: String, steps: [DecisionStep], reason: DecisionReason,
                 variationId: String?, variationKey: String?) {
        self.experienceKey = experienceKey
        self.experienceId = experienceId
        self.visitorId = visitorId
        self.steps = steps
        self.reason = reason
        self.variationId = variationId
        self.variationKey = variationKey
    }
}

/// Receives each check as the decision is made; the production path uses ``SilentTracer``.
protocol DecisionTracer {
    /// Whether steps are kept; when not, rules are evaluated without building outcomes.
    static var recordsSteps: Bool { get }
    mutating func record(_ step: @autoclosure () -> DecisionStep)
}

struct SilentTracer: DecisionTracer {
    // A stored byte gives each decision's tracer a stack address of its own: an empty value
    // passed `inout` shares one address (its type's) across threads, which the thread
    // sanitizer's exclusivity checks report as a race.
    private var unused: UInt8 = 0
    static var recordsSteps: Bool { false }
    @inline(__always) mutating func record(_ step: @autoclosure () -> DecisionStep) {}
}

struct RecordingTracer: DecisionTracer {
    static var recordsSteps: Bool { true }
    var steps: [DecisionStep] = []
    mutating func record(_ step: @autoclosure () -> DecisionStep) { steps.append(step()) }
}
