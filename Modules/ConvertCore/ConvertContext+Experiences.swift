import ConvertEvents
import ConvertModel
import ConvertRules
import ConvertStorage

extension ConvertContext {
    /// Decides the experience with `key` for this visitor: the stored decision when there is one
    /// and the visitor still qualifies, otherwise fresh bucketing (stored, tracked, announced).
    ///
    /// Synchronous and non-blocking (no I/O, no awaiting): call it from any thread, a SwiftUI
    /// `body` or a synchronous request handler.
    ///
    /// ```swift
    /// if let variation = context.variation(forExperience: "checkout-test") { render(variation.key) }
    /// ```
    ///
    /// - Parameters:
    ///   - key: the experience key.
    ///   - enableTracking: `false` keeps this call's bucketing event from being sent.
    /// - Returns: the variation, or `nil` when the visitor does not qualify, is not bucketed,
    ///   the key is unknown or the SDK is not ready.
    public func variation(forExperience key: String, enableTracking: Bool = true) -> BucketedVariation? {
        withDecider("variation(forExperience:)", refused: { _ in failedCall(.experience, key).value }) { decider in
            guard decider.snapshot.hooks.isEmpty else { return decider.hookedDetail(key, enableTracking: enableTracking).value }
            return decider.decide(key: key, enableTracking: enableTracking)
        }
    }

    /// Decides the experience with `key` as ``variation(forExperience:enableTracking:)`` does
    /// (storing, tracking and announcing the same), and says why: the reason in OpenFeature's
    /// terms, an error code, and the gate that kept the visitor out.
    ///
    /// ```swift
    /// let detail = context.variationDetail(forExperience: "checkout-test")
    /// switch detail.reason {
    /// case .split, .targetingMatch, .cached: render(detail.variant)
    /// case .default: log("not shown: \(String(describing: detail.gate))")
    /// default: log("\(detail.reason): \(String(describing: detail.errorCode))")
    /// }
    /// ```
    public func variationDetail(forExperience key: String, enableTracking: Bool = true) -> VariationDetail {
        withDecider("variationDetail(forExperience:)", refused: { _ in failedCall(.experience, key) }) { decider in
            decider.hookedDetail(key, enableTracking: enableTracking)
        }
    }

    /// A call that could not start (not ready, unusable visitor id): its error detail, with the
    /// hooks told.
    func failedCall(_ kind: HookContext.FlagKind, _ key: String) -> VariationDetail {
        let result = unusable(key)
        let hooks = hooksForFailedCall()
        guard !hooks.isEmpty else { return result }
        let context = HookContext(flagKind: kind, key: key, visitorId: visitorId, attributes: visitorAttributes)
        runtime.runHooks(hooks, "before") { try $0.before(context) }
        let details: EvaluationDetails = kind == .experience ? .variation(result)
            : .feature(FeatureDetail(value: .disabled(key: key, feature: nil), reason: result.reason, errorCode: result.errorCode,
                                     experiences: []))
        runtime.finishHooks(hooks, context, details)
        return result
    }

    /// Decides every experience in the config, in config order; returns those with a variation.
    /// Synchronous, like ``variation(forExperience:enableTracking:)``.
    public func variations(enableTracking: Bool = true) -> [BucketedVariation] {
        withDecider("variations()", refused: { _ in [] }) { decider in
            var found: [BucketedVariation] = []
            for position in decider.installed.config.experiences.indices {
                let variation = decider.snapshot.hooks.isEmpty
                    ? decider.decide(position: position, enableTracking: enableTracking)
                    : decider.hookedDetail(decider.installed.plans[position].key, at: position, enableTracking: enableTracking).value
                if let variation { found.append(variation) }
            }
            return found
        }
    }

    /// Explains how the experience with `key` would be decided for this visitor, check by check,
    /// without storing, tracking or announcing anything. Synchronous.
    public func explanation(forExperience key: String) -> DecisionTrace {
        withDecider("explanation(forExperience:)", recording: false, refused: { reason in
            let step: DecisionStep = reason == .invalidVisitorId
                ? .invalidVisitorId(problem: visitorIdProblem ?? "") : .notReady
            return DecisionTrace(experienceKey: key, experienceId: nil, visitorId: visitorId, steps: [step], reason: reason,
                                 variationId: nil, variationKey: nil)
        }) { decider in
            guard let position = decider.installed.experiencePosition(key: key) else {
                return DecisionTrace(experienceKey: key, experienceId: nil, visitorId: visitorId,
                                     steps: [.experienceNotFound(key: key)], reason: .experienceNotFound,
                                     variationId: nil, variationKey: nil)
            }
            return decider.trace(position: position)
        }
    }

    /// The seed API's name for ``variation(forExperience:enableTracking:)``.
    public func runExperience(_ key: String, enableTracking: Bool = true) async -> BucketedVariation? {
        variation(forExperience: key, enableTracking: enableTracking)
    }

    /// ``runExperience(_:enableTracking:)`` with a completion handler.
    public func runExperience(_ key: String, enableTracking: Bool = true,
                              completion: @escaping @Sendable (BucketedVariation?) -> Void) {
        Task { completion(await runExperience(key, enableTracking: enableTracking)) }
    }

    /// The seed API's name for ``variations(enableTracking:)``.
    public func runExperiences(enableTracking: Bool = true) async -> [BucketedVariation] {
        variations(enableTracking: enableTracking)
    }

    /// ``runExperiences(enableTracking:)`` with a completion handler.
    public func runExperiences(enableTracking: Bool = true, completion: @escaping @Sendable ([BucketedVariation]) -> Void) {
        Task { completion(await runExperiences(enableTracking: enableTracking)) }
    }

    /// The seed API's name for ``explanation(forExperience:)``.
    public func explainExperience(_ key: String) async -> DecisionTrace {
        explanation(forExperience: key)
    }

    /// This visitor's key in the visitor store.
    func storeKey(_ installed: InstalledConfig) -> VisitorKey {
        installed.visitorKey(visitorId, visitorHash: visitorHash)
    }

    /// The detail of a call that could not decide: the visitor id is unusable, or no config yet.
    func unusable(_ key: String) -> VariationDetail {
        let reason: DecisionReason = visitorIdProblem == nil ? .notReady : .invalidVisitorId
        let (evaluation, error) = reason.evaluation(targeted: false)
        return VariationDetail(experienceKey: key, value: nil, reason: evaluation, decisionReason: reason,
                               errorCode: error, gate: nil)
    }

}
