import ConvertEnvironment
import ConvertEvents
import ConvertModel
import ConvertRules
import ConvertStorage
import ConvertVisitor

/// Decides and records for one call of one visitor: experiences and features through
/// ``DecisionEngine``, then the one store write a change needs, tracking, announcements and
/// hooks. A context makes one per call in ``ConvertContext/withDecider(_:recording:refused:_:)``
/// — after the visitor id was checked and the SDK's decision state read — so a decider is never
/// shared between threads; the only lock it takes is the visitor's store shard, when something
/// changed.
///
/// A method that only borrows this 225-byte value, called from one that mutates it, is handed
/// a copy (a `memcpy` in the object code): the small checks called on every decision are
/// therefore inlined. Making the callers' reads `mutating` instead avoids the copies but retains
/// the fields they read (measured: more reference counts than the copies cost).
struct Decider: ~Copyable {
    let runtime: SDKRuntime
    let visitorId: String
    let visitorHash: UInt64
    /// The context's creation report keys (see ``ConvertContext/creationSegments``).
    let creationSegments: ReportValues?
    /// The config the whole call decides against.
    let installed: InstalledConfig
    /// What the call reads of the context.
    var snapshot: ConvertContext.Snapshot
    /// The config's locations as the call's decisions matched them so far: location rules read
    /// the location properties alone, so the call's other experiences reuse each answer.
    private var locations = RuleMemo()
    /// The visitor's store key in `installed`'s namespace.
    var key: VisitorKey { installed.visitorKey(visitorId, visitorHash: visitorHash) }
    /// The visitor's data as this call last saw it: read (or taken from the data prefetched at
    /// the context's creation) before the first decision, then what each decision stored, so a
    /// call reads the store once.
    private(set) var stored = VisitorData()
    private var storedRead = false

    init(runtime: SDKRuntime, visitorId: String, visitorHash: UInt64, creationSegments: ReportValues?,
         installed: InstalledConfig, snapshot: consuming ConvertContext.Snapshot) {
        self.runtime = runtime
        self.visitorId = visitorId
        self.visitorHash = visitorHash
        self.creationSegments = creationSegments
        self.installed = installed
        self.snapshot = snapshot
        if self.snapshot.prefetchedNamespace == installed.namespaceHash, let prefetched = self.snapshot.prefetched.take() {
            stored = prefetched
            storedRead = true
        }
    }

    /// The config's model.
    var config: ProjectConfig { installed.config }
    /// The attributes the call's audiences read.
    var attributes: [String: JSONValue] { snapshot.attributes }
    /// The properties the call's locations read.
    var locationProperties: [String: JSONValue] { snapshot.locationProperties }
    var hashSeed: UInt32 { runtime.configuration.hashSeed }

    /// Reads the visitor's data, the first time a decision of the call needs it.
    mutating func readStored() {
        guard !storedRead else { return }
        stored = runtime.ports.visitorStore.data(for: key) ?? VisitorData()
        storedRead = true
    }

    // MARK: Experiences

    /// The detail of the experience with `key`, with the call's hooks around it.
    mutating func hookedDetail(_ key: String, enableTracking: Bool) -> VariationDetail {
        hookedDetail(key, at: installed.experiencePosition(key: key), enableTracking: enableTracking)
    }

    /// ``hookedDetail(_:enableTracking:)`` for the experience at `position`, already found
    /// (`nil`: no experience has `key`).
    mutating func hookedDetail(_ key: String, at position: Int?, enableTracking: Bool) -> VariationDetail {
        let hooks = snapshot.hooks
        let context = hooks.isEmpty ? nil : HookContext(flagKind: .experience, key: key, visitorId: visitorId,
                                                        attributes: snapshot.attributes)
        if let context { runtime.runHooks(hooks, "before") { try $0.before(context) } }
        let result: VariationDetail
        if let position {
            result = detail(position: position, enableTracking: enableTracking)
        } else {
            runtime.log.warn("no experience has the key \"\(key)\"")
            result = VariationDetail(experienceKey: key, value: nil, reason: .error, decisionReason: .experienceNotFound,
                                     errorCode: .flagNotFound, gate: nil)
        }
        if let context { runtime.finishHooks(hooks, context, .variation(result)) }
        return result
    }

    mutating func decide(key: String, enableTracking: Bool) -> BucketedVariation? {
        guard let position = installed.experiencePosition(key: key) else {
            runtime.log.warn("no experience has the key \"\(key)\"")
            return nil
        }
        return decide(position: position, enableTracking: enableTracking)
    }

    mutating func decide(position: Int, enableTracking: Bool) -> BucketedVariation? {
        let (index, source) = decideIndex(position: position, enableTracking: enableTracking)
        return variation(index, of: installed.plans[position], source)
    }

    /// Decides, stores, tracks and announces, and describes the outcome.
    mutating func detail(position: Int, enableTracking: Bool) -> VariationDetail {
        detailAndIndex(position: position, enableTracking: enableTracking).detail
    }

    /// ``detail(position:enableTracking:)``, with the index of the variation in the
    /// experience's variations.
    mutating func detailAndIndex(position: Int, enableTracking: Bool) -> (detail: VariationDetail, variationIndex: Int?) {
        let plan = installed.plans[position]
        let (index, source) = decideIndex(position: position, enableTracking: enableTracking)
        let value = variation(index, of: plan, source)
        let detail: VariationDetail
        switch source {
        case .forced:
            detail = VariationDetail(experienceKey: plan.key, value: value, reason: .static, decisionReason: .forced,
                                     errorCode: nil, gate: nil)
        case .previewed:
            detail = VariationDetail(experienceKey: plan.key, value: value, reason: .static, decisionReason: .preview,
                                     errorCode: nil, gate: nil)
        case .decided(let decision):
            let (reason, error) = decision.reason.evaluation(targeted: decision.targeted(plan))
            detail = VariationDetail(experienceKey: plan.key, value: value, reason: reason, decisionReason: decision.reason,
                                     errorCode: error, gate: decision.gate(plan, installed))
        }
        return (detail, index)
    }

    /// How a decision of one experience came about.
    enum DecisionSource {
        /// A QA override forced the variation.
        case forced
        /// A preview forced the variation.
        case previewed
        /// The engine decided, finding this.
        case decided(ExperienceDecision)
    }

    /// Decides, stores, tracks and announces: the index of the variation in the experience's
    /// variations (what a feature result is looked up by; no variation value is built) and how
    /// it came about.
    mutating func decideIndex(position: Int, enableTracking: Bool) -> (index: Int?, source: DecisionSource) {
        // Lent, not retained: every thread deciding this experience would count on the one plan.
        // `installed` (a constant here) keeps it alive for the call.
        Unmanaged.passUnretained(installed.plans[position])._withUnsafeGuaranteedRef { plan in
            decideIndex(plan, enableTracking: enableTracking)
        }
    }

    private mutating func decideIndex(_ plan: ExperiencePlan, enableTracking: Bool) -> (index: Int?, source: DecisionSource) {
        if let forced = forcedVariation(plan) { return (forced, .forced) }
        if let previewed = previewVariation(plan.experience) { return (previewed, .previewed) }
        var tracer = SilentTracer()
        readStored()
        var memo = locations
        let decision = DecisionEngine.decide(plan, self, memo: &memo, tracer: &tracer)
        locations = memo
        for key in decision.unresolvedExperienceKeys {
            runtime.log.warn("experience \(plan.key): mutual-exclusion rule names unknown experience key \"\(key)\"")
        }
        // A preview records nothing.
        guard snapshot.preview == nil else { return (decision.variationIndex, .decided(decision)) }
        let recorded = record(decision, plan, enableTracking: enableTracking)
        if let data = recorded.data { stored = data }
        return (recorded.variationIndex, .decided(decision))
    }

    /// The variation at `index` in `plan`'s variations, as `source` gave it.
    private func variation(_ index: Int?, of plan: ExperiencePlan, _ source: DecisionSource) -> BucketedVariation? {
        guard let index else { return nil }
        let variation = plan.variationModels[index]
        switch source {
        case .forced:
            return BucketedVariation(experience: plan.experience, variation: variation, isStored: false, isPreview: false,
                                     isForced: true)
        case .previewed:
            return BucketedVariation(experience: plan.experience, variation: variation, isStored: false, isPreview: true)
        case .decided(let decision):
            return BucketedVariation(experience: plan.experience, variation: variation, isStored: !decision.isNew,
                                     isPreview: false)
        }
    }

    /// How the experience at `position` would be decided, check by check, storing, tracking and
    /// announcing nothing: the same engine run as a decision, with a tracer that keeps the steps.
    mutating func trace(position: Int) -> DecisionTrace {
        let plan = installed.plans[position]
        let key = plan.key, experienceId = plan.experienceId
        if let index = forcedVariation(plan) {
            let forced = plan.variationModels[index]
            return DecisionTrace(experienceKey: key, experienceId: experienceId, visitorId: visitorId,
                                 steps: [.forced(variationId: forced.id)], reason: .forced,
                                 variationId: forced.id, variationKey: forced.key)
        }
        if let index = previewVariation(plan.experience) {
            let forced = plan.variationModels[index]
            return DecisionTrace(experienceKey: key, experienceId: experienceId, visitorId: visitorId,
                                 steps: [.preview(variationId: forced.id)], reason: .preview,
                                 variationId: forced.id, variationKey: forced.key)
        }
        var tracer = RecordingTracer()
        readStored()
        // A recording tracer evaluates every location itself: no memo is read or kept.
        var memo = RuleMemo()
        let decision = DecisionEngine.decide(plan, self, memo: &memo, tracer: &tracer)
        let variation = decision.variation(in: plan)
        return DecisionTrace(experienceKey: key, experienceId: experienceId, visitorId: visitorId, steps: tracer.steps,
                             reason: decision.reason, variationId: variation?.id, variationKey: variation?.key)
    }

    /// The index of the variation a QA override forces for this visitor, when it names one of
    /// the experience's.
    @inline(__always)
    private func forcedVariation(_ plan: ExperiencePlan) -> Int? {
        guard let wanted = snapshot.overrides?.variation(forExperience: plan.key, visitorId: visitorId) else { return nil }
        if let index = plan.experience.variationIndex(key: wanted) ?? plan.experience.variationIndex(id: wanted) { return index }
        runtime.log.warn("override for experience \(plan.key): no variation has the key or id \"\(wanted)\"; ignored")
        return nil
    }

    /// The index of the variation a preview forces, for the experience it names.
    @inline(__always)
    private func previewVariation(_ experience: Experience) -> Int? {
        guard let preview = snapshot.preview, preview.experienceId == experience.id else { return nil }
        return experience.variationIndex(id: preview.variationId)
    }
}
