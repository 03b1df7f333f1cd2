import ConvertModel

/// Why a decision gave its value, in OpenFeature's vocabulary.
public enum EvaluationReason: String, Sendable, Hashable, Codable {
    /// Freshly bucketed after the experience's targeting (locations, audiences, segments) matched.
    case targetingMatch
    /// Freshly bucketed in an experience that targets every visitor: the traffic split alone.
    case split
    /// The visitor's stored (sticky) decision.
    case cached
    /// Forced, not evaluated: a preview or a QA override (``DecisionOverrides``).
    case `static`
    /// The experience does not run here: archived, or in another environment.
    case disabled
    /// The visitor did not qualify (see ``VariationDetail/gate``) or fell outside every
    /// variation's traffic: the default (no variation, a disabled feature).
    case `default`
    /// The decision could not be made; ``VariationDetail/errorCode`` says why.
    case error
}

extension EvaluationReason {
    /// The reason in snake case (`targeting_match`, `split`, …), as OpenTelemetry's
    /// `feature_flag.result.reason` and metrics dimensions spell it.
    public var snakeCaseName: String {
        switch self {
        case .targetingMatch: "targeting_match"
        case .split: "split"
        case .cached: "cached"
        case .static: "static"
        case .disabled: "disabled"
        case .default: "default"
        case .error: "error"
        }
    }
}

/// Why a decision could not be made, in OpenFeature's vocabulary.
public enum EvaluationErrorCode: String, Sendable, Hashable, Codable {
    /// No experience or feature has the key.
    case flagNotFound
    /// No config is installed yet.
    case notReady
    /// The context's visitor id is empty, blank or too long (``ConvertContext/visitorIdProblem``).
    case invalidVisitorId
    /// A variable asked for with a type its value does not have.
    case typeMismatch
}

/// The check that kept a visitor out of an experience.
public enum DecisionGate: Sendable, Hashable {
    /// The experience is archived.
    case archived
    /// The experience runs in `experience`, the SDK in `sdk`.
    case environment(experience: String, sdk: String)
    /// None of these locations matched the location properties (empty when none of the
    /// experience's location ids names a location).
    case locations(ids: [String])
    /// The experience's `site_area` rules did not match.
    case siteArea
    /// These audiences were checked and did not match (with "all" matching, the one failure
    /// is enough; with "any", all of them failed).
    case audiences(ids: [String])
    /// The visitor is in none of these custom segments.
    case segments(required: [String])
    /// The visitor's bucket fell outside every variation's traffic allocation.
    case traffic
}

/// An experience decision with why it came out as it did.
///
/// ```swift
/// let detail = context.variationDetail(forExperience: "checkout-test")
/// log("\(detail.variant ?? "none"): \(detail.reason)")   // "1003142551-variation-1: split"
/// ```
public struct VariationDetail: Sendable, Hashable {
    /// The experience key asked for.
    public let experienceKey: String
    /// The variation, as ``ConvertContext/variation(forExperience:enableTracking:)`` returns it.
    public let value: BucketedVariation?
    /// Why, in OpenFeature's terms.
    public let reason: EvaluationReason
    /// Why, in the SDK's own finer terms (the same as ``DecisionTrace/reason``).
    public let decisionReason: DecisionReason
    /// Set when ``reason`` is ``EvaluationReason/error``.
    public let errorCode: EvaluationErrorCode?
    /// The check that kept the visitor out, when one did.
    public let gate: DecisionGate?

    package init(experienceKey: String, value: BucketedVariation?, reason: EvaluationReason, decisionReason: DecisionReason,
                 errorCode: EvaluationErrorCode?, gate: DecisionGate?) {
        self.experienceKey = experienceKey
        self.value = value
        self.reason = reason
        self.decisionReason = decisionReason
        self.errorCode = errorCode
        self.gate = gate
    }

    /// The variation's key (its id when it has no key), `nil` without a variation.
    public var variant: String? { value.map { $0.key ?? $0.id } }
}

/// A feature decision with why it came out as it did.
public struct FeatureDetail: Sendable, Hashable {
    /// The feature, as ``ConvertContext/feature(_:typeCasting:enableTracking:)`` returns it.
    public let value: BucketedFeature
    /// Why: the deciding experience's reason when the feature is on; ``EvaluationReason/default``
    /// when no experience carrying it gave the visitor a variation that switches it on.
    public let reason: EvaluationReason
    /// Set when ``reason`` is ``EvaluationReason/error``.
    public let errorCode: EvaluationErrorCode?
    /// The decisions of the experiences carrying the feature, in config order, as far as they
    /// were made (the first that switches the feature on ends the walk).
    public let experiences: [VariationDetail]

    package init(value: BucketedFeature, reason: EvaluationReason, errorCode: EvaluationErrorCode?, experiences: [VariationDetail]) {
        self.value = value
        self.reason = reason
        self.errorCode = errorCode
        self.experiences = experiences
    }

    /// The feature key asked for.
    public var featureKey: String { value.key }
    /// The key (or id) of the variation that switched the feature on.
    public var variant: String? { value.variationKey ?? value.variationId }
}

extension DecisionReason {
    /// The OpenFeature reason and error code of a decision that ended here.
    package func evaluation(targeted: Bool) -> (EvaluationReason, EvaluationErrorCode?) {
        switch self {
        case .notReady: return (.error, .notReady)
        case .experienceNotFound: return (.error, .flagNotFound)
        case .invalidVisitorId: return (.error, .invalidVisitorId)
        case .archived, .environmentMismatch: return (.disabled, nil)
        case .preview, .forced: return (.static, nil)
        case .locationNotMatched, .audienceNotMatched, .segmentNotMatched, .notBucketed: return (.default, nil)
        case .storedDecision: return (.cached, nil)
        case .bucketed: return (targeted ? .targetingMatch : .split, nil)
        }
    }
}

extension ExperienceDecision {
    /// The gate that ended the decision, named with the config's ids.
    package func gate(_ plan: Experience, _ installed: InstalledConfig) -> DecisionGate? {
        let config = installed.config
        switch reason {
        case .archived: return .archived
        case .environmentMismatch: return .environment(experience: plan.environment ?? "", sdk: installed.environment)
        case .locationNotMatched:
            guard !plan.locationIds.isEmpty else { return .siteArea }
            return .locations(ids: plan.locationIndexes.map { config.locations[$0].id })
        case .audienceNotMatched:
            let failed = plan.audienceIndexes.enumerated().compactMap { position, index -> String? in
                let bit: UInt64 = position < 64 ? 1 << UInt64(position) : 0
                return checkedAudiences & bit != 0 && matchedAudiences & bit == 0 ? config.audiences[index].id : nil
            }
            return .audiences(ids: failed)
        case .segmentNotMatched: return .segments(required: plan.segmentIds)
        case .notBucketed: return .traffic
        default: return nil
        }
    }

    /// Whether a targeting gate was passed on the way (locations, site area, audiences, segments).
    package func targeted(_ plan: Experience) -> Bool {
        !plan.locationIds.isEmpty || plan.siteArea != nil || audiencesChecked || !plan.segmentIds.isEmpty
    }
}
