import ConvertEvents
import ConvertModel
import ConvertRules
import ConvertStorage
import ConvertSupport

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
        guard case (let installed, var snapshot)? = begin("variation(forExperience:)") else {
            return failedCall(.experience, key).value
        }
        guard snapshot.hooks.isEmpty else { return hookedDetail(key, installed, &snapshot, enableTracking: enableTracking).value }
        return decide(key: key, installed, &snapshot, enableTracking: enableTracking)
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
        guard case (let installed, var snapshot)? = begin("variationDetail(forExperience:)") else {
            return failedCall(.experience, key)
        }
        return hookedDetail(key, installed, &snapshot, enableTracking: enableTracking)
    }

    /// The detail of the experience with `key`, with the call's hooks around it.
    func hookedDetail(_ key: String, _ installed: InstalledConfig, _ snapshot: inout Snapshot,
                      enableTracking: Bool) -> VariationDetail {
        let hooks = snapshot.hooks
        let context = hooks.isEmpty ? nil : HookContext(flagKind: .experience, key: key, visitorId: visitorId,
                                                        attributes: snapshot.attributes)
        if let context { core.runHooks(hooks, "before") { try $0.before(context) } }
        let result: VariationDetail
        if let position = installed.experiencePosition(key: key) {
            result = detail(position: position, installed, &snapshot, enableTracking: enableTracking)
        } else {
            core.log.warn("no experience has the key \"\(key)\"")
            result = VariationDetail(experienceKey: key, value: nil, reason: .error, decisionReason: .experienceNotFound,
                                     errorCode: .flagNotFound, gate: nil)
        }
        if let context { finishHooks(hooks, context, .variation(result)) }
        return result
    }

    /// A call that could not start (not ready, unusable visitor id): its error detail, with the
    /// hooks told.
    func failedCall(_ kind: HookContext.FlagKind, _ key: String) -> VariationDetail {
        let result = unusable(key)
        let hooks = hooksForFailedCall()
        guard !hooks.isEmpty else { return result }
        let context = HookContext(flagKind: kind, key: key, visitorId: visitorId, attributes: visitorAttributes)
        core.runHooks(hooks, "before") { try $0.before(context) }
        let details: EvaluationDetails = kind == .experience ? .variation(result)
            : .feature(FeatureDetail(value: .disabled(key: key, feature: nil), reason: result.reason, errorCode: result.errorCode,
                                     experiences: []))
        finishHooks(hooks, context, details)
        return result
    }

    /// `after` (or `error`), then `finally`.
    func finishHooks(_ hooks: [any EvaluationHook], _ context: HookContext, _ details: EvaluationDetails) {
        if details.reason == .error {
            core.runHooks(hooks, "error") { try $0.error(context, details: details) }
        } else {
            core.runHooks(hooks, "after") { try $0.after(context, details: details) }
        }
        core.runHooks(hooks, "finally") { try $0.finally(context, details: details) }
    }

    /// Decides every experience in the config, in config order; returns those with a variation.
    /// Synchronous, like ``variation(forExperience:enableTracking:)``.
    public func variations(enableTracking: Bool = true) -> [BucketedVariation] {
        guard case (let installed, var snapshot)? = begin("variations()") else { return [] }
        var found: [BucketedVariation] = []
        for position in installed.config.experiences.indices {
            let variation = snapshot.hooks.isEmpty
                ? decide(position: position, installed, &snapshot, enableTracking: enableTracking)
                : hookedDetail(installed.plans[position].key, installed, &snapshot, enableTracking: enableTracking).value
            if let variation { found.append(variation) }
        }
        return found
    }

    /// Explains how the experience with `key` would be decided for this visitor, check by check,
    /// without storing, tracking or announcing anything. Synchronous.
    public func explanation(forExperience key: String) -> DecisionTrace {
        let installed: InstalledConfig
        var snapshot: Snapshot
        switch start("explanation(forExperience:)", recording: false) {
        case .refused(let reason):
            let step: DecisionStep = reason == .invalidVisitorId
                ? .invalidVisitorId(problem: visitorIdProblem ?? "") : .notReady
            return DecisionTrace(experienceKey: key, experienceId: nil, visitorId: visitorId, steps: [step], reason: reason,
                                 variationId: nil, variationKey: nil)
        case .ready(let current, let taken):
            installed = current
            snapshot = taken
        }
        guard let position = installed.experiencePosition(key: key) else {
            return DecisionTrace(experienceKey: key, experienceId: nil, visitorId: visitorId,
                                 steps: [.experienceNotFound(key: key)], reason: .experienceNotFound,
                                 variationId: nil, variationKey: nil)
        }
        let experience = installed.config.experiences[position]
        if let forced = forcedVariation(installed.plans[position], snapshot) {
            return DecisionTrace(experienceKey: key, experienceId: experience.id, visitorId: visitorId,
                                 steps: [.forced(variationId: forced.id)], reason: .forced,
                                 variationId: forced.id, variationKey: forced.key)
        }
        if let forced = previewVariation(experience, snapshot) {
            return DecisionTrace(experienceKey: key, experienceId: experience.id, visitorId: visitorId,
                                 steps: [.preview(variationId: forced.id)], reason: .preview,
                                 variationId: forced.id, variationKey: forced.key)
        }
        var tracer = RecordingTracer()
        let decision = DecisionEngine.decide(position, input(installed, &snapshot), tracer: &tracer)
        return DecisionTrace(experienceKey: key, experienceId: experience.id, visitorId: visitorId, steps: tracer.steps,
                             reason: decision.reason, variationId: decision.variation?.id,
                             variationKey: decision.variation?.key)
    }

    /// The seed API's name for ``variation(forExperience:enableTracking:)``.
    public func runExperience(_ key: String, enableTracking: Bool = true) async -> BucketedVariation? {
        variation(forExperience: key, enableTracking: enableTracking)
    }

    /// The seed API's name for ``variations(enableTracking:)``.
    public func runExperiences(enableTracking: Bool = true) async -> [BucketedVariation] {
        variations(enableTracking: enableTracking)
    }

    /// The seed API's name for ``explanation(forExperience:)``.
    public func explainExperience(_ key: String) async -> DecisionTrace {
        explanation(forExperience: key)
    }

    func input(_ installed: InstalledConfig, _ snapshot: inout Snapshot) -> DecisionInput {
        let key = storeKey(installed)
        let stored: VisitorData
        if let known = snapshot.stored, snapshot.storedNamespace == installed.namespaceHash {
            stored = known
        } else {
            stored = core.ports.visitorStore.data(for: key) ?? VisitorData()
            snapshot.stored = stored
            snapshot.storedNamespace = installed.namespaceHash
        }
        return DecisionInput(installed: installed, visitorId: visitorId, key: key,
                             stored: stored,
                             attributes: snapshot.attributes, locationProperties: snapshot.locationProperties,
                             creationSegments: creationSegments, hashSeed: core.configuration.hashSeed)
    }

    /// This visitor's key in the visitor store.
    func storeKey(_ installed: InstalledConfig) -> VisitorKey {
        installed.visitorKey(visitorId, visitorHash: visitorHash)
    }

    func decide(key: String, _ installed: InstalledConfig, _ snapshot: inout Snapshot, enableTracking: Bool) -> BucketedVariation? {
        guard let position = installed.experiencePosition(key: key) else {
            core.log.warn("no experience has the key \"\(key)\"")
            return nil
        }
        return decide(position: position, installed, &snapshot, enableTracking: enableTracking)
    }

    /// The variation a QA override forces for this visitor, when it names one of the experience's.
    private func forcedVariation(_ plan: ExperiencePlan, _ snapshot: Snapshot) -> Variation? {
        guard let wanted = snapshot.overrides?.variation(forExperience: plan.key, visitorId: visitorId) else { return nil }
        if let variation = plan.variationModels.first(where: { $0.key == wanted }) ?? plan.variationModels.first(where: { $0.id == wanted }) {
            return variation
        }
        core.log.warn("override for experience \(plan.key): no variation has the key or id \"\(wanted)\"; ignored")
        return nil
    }

    private func previewVariation(_ experience: Experience, _ snapshot: Snapshot) -> Variation? {
        guard let preview = snapshot.preview, preview.experienceId == experience.id else { return nil }
        return experience.variation(id: preview.variationId)
    }

    func decide(position: Int, _ installed: InstalledConfig, _ snapshot: inout Snapshot,
                enableTracking: Bool) -> BucketedVariation? {
        decideInDetail(position: position, installed, &snapshot, enableTracking: enableTracking).variation
    }

    /// The detail of a call that could not decide: the visitor id is unusable, or no config yet.
    func unusable(_ key: String) -> VariationDetail {
        let reason: DecisionReason = visitorIdProblem == nil ? .notReady : .invalidVisitorId
        let (evaluation, error) = reason.evaluation(targeted: false)
        return VariationDetail(experienceKey: key, value: nil, reason: evaluation, decisionReason: reason,
                               errorCode: error, gate: nil)
    }

    /// Decides, stores, tracks and announces, and describes the outcome.
    func detail(position: Int, _ installed: InstalledConfig, _ snapshot: inout Snapshot,
                enableTracking: Bool) -> VariationDetail {
        let plan = installed.plans[position]
        let decided = decideInDetail(position: position, installed, &snapshot, enableTracking: enableTracking)
        guard let decision = decided.decision else {
            return VariationDetail(experienceKey: plan.key, value: decided.variation, reason: .static,
                                   decisionReason: decided.variation?.isForced == true ? .forced : .preview,
                                   errorCode: nil, gate: nil)
        }
        let (reason, error) = decision.reason.evaluation(targeted: decision.targeted(plan))
        return VariationDetail(experienceKey: plan.key, value: decided.variation, reason: reason,
                               decisionReason: decision.reason, errorCode: error, gate: decision.gate(plan, installed))
    }

    /// Decides, stores, tracks and announces; with what the engine found (`nil` for a preview).
    func decideInDetail(position: Int, _ installed: InstalledConfig, _ snapshot: inout Snapshot,
                        enableTracking: Bool) -> (variation: BucketedVariation?, decision: ExperienceDecision?) {
        let plan = installed.plans[position]
        if let forced = forcedVariation(plan, snapshot) {
            return (BucketedVariation(experience: plan.experience, variation: forced, isStored: false, isPreview: false,
                                      isForced: true), nil)
        }
        if let forced = previewVariation(plan.experience, snapshot) {
            return (BucketedVariation(experience: plan.experience, variation: forced, isStored: false, isPreview: true), nil)
        }
        var tracer = SilentTracer()
        let input = input(installed, &snapshot)
        let decision = DecisionEngine.decide(position, input, tracer: &tracer)
        for key in decision.unresolvedExperienceKeys {
            core.log.warn("experience \(plan.key): mutual-exclusion rule names unknown experience key \"\(key)\"")
        }
        let quiet = snapshot.preview != nil
        var variation = decision.variation
        if !quiet {
            let recorded = record(decision, position, installed, input, enableTracking: enableTracking, snapshot)
            variation = recorded.variation
            if let data = recorded.data { snapshot.stored = data }
        }
        guard let variation else { return (nil, decision) }
        return (BucketedVariation(experience: plan.experience, variation: variation, isStored: !decision.isNew,
                                  isPreview: false), decision)
    }

}
