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
    ///   - enableTracking: `false` keeps this call's bucketing event from being sent (the same as
    ///     ``Exposure/none``).
    /// - Returns: the variation, or `nil` when the visitor does not qualify, is not bucketed,
    ///   the key is unknown or the SDK is not ready.
    public func variation(forExperience key: String, enableTracking: Bool = true) -> BucketedVariation? {
        variation(forExperience: key, exposure: enableTracking ? .automatic : .none)
    }

    /// Decides the experience with `key` as ``variation(forExperience:enableTracking:)`` does,
    /// sending its bucketing event as `exposure` says: at decision time (``Exposure/automatic``),
    /// when the app calls ``trackExposure(forExperience:)`` (``Exposure/manual``), or never.
    ///
    /// ```swift
    /// let variation = context.variation(forExperience: "checkout-test", exposure: .manual)
    /// ```
    public func variation(forExperience key: String, exposure: Exposure) -> BucketedVariation? {
        guard var decider = begin("variation(forExperience:)") else { return failedCall(.experience, key).value }
        var detail: VariationDetail?
        return decider.experience(key, at: decider.installed.experiencePosition(key: key), in: decider.installed, exposure: exposure,
                                  detailed: false, detail: &detail)
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
        variationDetail(forExperience: key, exposure: enableTracking ? .automatic : .none)
    }

    /// ``variationDetail(forExperience:enableTracking:)`` with the exposure of
    /// ``variation(forExperience:exposure:)``.
    public func variationDetail(forExperience key: String, exposure: Exposure) -> VariationDetail {
        guard var decider = begin("variationDetail(forExperience:)") else { return failedCall(.experience, key) }
        var detail: VariationDetail?
        _ = decider.experience(key, at: decider.installed.experiencePosition(key: key), in: decider.installed, exposure: exposure,
                               detailed: true, detail: &detail)
        return detail ?? unusable(key)
    }

    /// A call that could not start (not ready, unusable visitor id): its error detail, with the
    /// hooks told.
    func failedCall(_ kind: HookContext.FlagKind, _ key: String) -> VariationDetail {
        let result = unusable(key)
        let hooks = hooksForFailedCall()
        guard hooks.runs(.evaluation) else { return result }
        let context = HookContext(flagKind: kind, key: key, visitorId: visitorId, attributes: visitorAttributes)
        runtime.runHooks(hooks, .before) { try $0.before(context) }
        let details: EvaluationDetails = kind == .experience ? .variation(result)
            : .feature(FeatureDetail(value: .disabled(key: key, feature: nil), reason: result.reason, errorCode: result.errorCode,
                                     experiences: []))
        runtime.finishHooks(hooks, context, details)
        return result
    }

    /// Decides every experience in the config, in config order; returns those with a variation.
    /// Synchronous, like ``variation(forExperience:enableTracking:)``.
    public func variations(enableTracking: Bool = true) -> [BucketedVariation] {
        variations(exposure: enableTracking ? .automatic : .none)
    }

    /// ``variations(enableTracking:)`` with the exposure of ``variation(forExperience:exposure:)``.
    public func variations(exposure: Exposure) -> [BucketedVariation] {
        guard var decider = begin("variations()") else { return [] }
        var found: [BucketedVariation] = []
        let installed = decider.installed, experiences = installed.experiences
        var detail: VariationDetail?
        for position in experiences.indices {
            let variation = decider.experience(experiences[position].key, at: position, in: installed, exposure: exposure,
                                               detailed: false, detail: &detail)
            if let variation { found.append(variation) }
        }
        return found
    }

    /// Explains how the experience with `key` would be decided for this visitor, check by check,
    /// without storing, tracking or announcing anything. Synchronous.
    public func explanation(forExperience key: String) -> DecisionTrace {
        guard var decider = begin("explanation(forExperience:)", recording: false) else {
            let step: DecisionStep = visitorIdProblem.map { .invalidVisitorId(problem: $0) } ?? .notReady
            return DecisionTrace(experienceKey: key, experienceId: nil, visitorId: visitorId, steps: [step],
                                 reason: refusalReason, variationId: nil, variationKey: nil)
        }
        guard let position = decider.installed.experiencePosition(key: key) else {
            return DecisionTrace(experienceKey: key, experienceId: nil, visitorId: visitorId,
                                 steps: [.experienceNotFound(key: key)], reason: .experienceNotFound,
                                 variationId: nil, variationKey: nil)
        }
        return decider.trace(position)
    }

    /// ``variation(forExperience:enableTracking:)``, for code written with `await`.
    public func runExperience(_ key: String, enableTracking: Bool = true) async -> BucketedVariation? {
        variation(forExperience: key, enableTracking: enableTracking)
    }

    /// ``variation(forExperience:exposure:)``, for code written with `await`.
    public func runExperience(_ key: String, exposure: Exposure) async -> BucketedVariation? {
        variation(forExperience: key, exposure: exposure)
    }

    /// ``runExperience(_:enableTracking:)`` with a completion handler.
    public func runExperience(_ key: String, enableTracking: Bool = true,
                              completion: @escaping @Sendable (BucketedVariation?) -> Void) {
        Task { completion(await runExperience(key, enableTracking: enableTracking)) }
    }

    /// ``variations(enableTracking:)``, for code written with `await`.
    public func runExperiences(enableTracking: Bool = true) async -> [BucketedVariation] {
        variations(enableTracking: enableTracking)
    }

    /// ``variations(exposure:)``, for code written with `await`.
    public func runExperiences(exposure: Exposure) async -> [BucketedVariation] {
        variations(exposure: exposure)
    }

    /// ``runExperiences(enableTracking:)`` with a completion handler.
    public func runExperiences(enableTracking: Bool = true, completion: @escaping @Sendable ([BucketedVariation]) -> Void) {
        Task { completion(await runExperiences(enableTracking: enableTracking)) }
    }

    /// ``explanation(forExperience:)``, for code written with `await`.
    public func explainExperience(_ key: String) async -> DecisionTrace {
        explanation(forExperience: key)
    }

    /// Why a call could not start: the visitor id is unusable, or no config yet.
    var refusalReason: DecisionReason { visitorIdProblem == nil ? .notReady : .invalidVisitorId }

    /// The detail of a call that could not decide: the visitor id is unusable, or no config yet.
    func unusable(_ key: String) -> VariationDetail {
        let reason = refusalReason
        let (evaluation, error) = reason.evaluation(targeted: false)
        return VariationDetail(experienceKey: key, value: nil, reason: evaluation, decisionReason: reason,
                               errorCode: error, gate: nil)
    }

}
