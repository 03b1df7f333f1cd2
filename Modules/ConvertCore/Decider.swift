import ConvertEnvironment
import ConvertEvents
import ConvertModel
import ConvertRules
import ConvertStorage
import ConvertVisitor

/// One call of one visitor: what it reads of the context and the SDK, taken once at the call's
/// start by ``ConvertContext/begin(_:recording:)``, and the side effects of its decisions (the
/// store write a change needs, tracking, announcements, hooks). The decisions themselves are
/// ``DecisionEngine``'s, on ``input``. A decider lives on one thread for one call.
struct Decider {
    let runtime: SDKRuntime
    /// The config the whole call decides against.
    let installed: InstalledConfig
    /// What the engine computes on; `input.stored` is read at the first decision that needs it.
    private(set) var input: DecisionInput
    private var storedRead: Bool
    let visitorHash: UInt64
    let preview: PreviewTarget?
    /// Whether the visitor consented: without it decisions are made but nothing is stored,
    /// tracked or announced.
    let consented: Bool
    /// What the call reads of the SDK: tracking switch, overrides, hooks, listeners.
    private let published: SDKRuntime.Published
    /// The SDK's hooks, then the context's: run around each evaluation.
    let hooks: HookList
    /// Whether any hook runs around the call's evaluations.
    private let hasHooks: Bool
    /// The config's locations as the call's decisions matched them so far: location rules read
    /// the location properties alone, so the call's other experiences reuse each answer.
    private var locations = RuleMemo()

    /// - Parameter prefetched: the visitor's data in `installed`'s namespace, when the context
    ///   already holds it (stored at its creation).
    init(runtime: SDKRuntime, installed: InstalledConfig, input: DecisionInput, prefetched: Bool, visitorHash: UInt64,
         preview: PreviewTarget?, consented: Bool = true, published: SDKRuntime.Published,
         contextHooks: HookList) {
        self.runtime = runtime
        self.installed = installed
        self.input = input
        storedRead = prefetched
        self.visitorHash = visitorHash
        self.preview = preview
        self.consented = consented
        self.published = published
        hooks = published.hooks + contextHooks
        hasHooks = hooks.runs(.evaluation)
    }

    /// Forced decisions in effect for this call, `nil` when none.
    var overrides: DecisionOverrides? { published.overrides }
    /// The SDK's hooks alone: they are told of tracking events.
    var trackingHooks: HookList { published.hooks }
    /// The system events that have listeners (``SystemEventHub`` mask).
    var listening: UInt32 { published.listening }
    /// Whether the call may store and send: no preview, and the visitor consented.
    var records: Bool { preview == nil && consented }
    /// Whether tracking is on for the SDK (configuration and runtime switch).
    var trackingEnabled: Bool { runtime.configuration.networkTracking && published.trackingEnabled }

    var visitorId: String { input.visitorId }
    /// The config's model.
    var config: ProjectConfig { installed.config }
    /// The visitor's store key in `installed`'s namespace.
    var key: VisitorKey { installed.visitorKey(input.visitorId, visitorHash: visitorHash) }
    /// The visitor's data as this call last saw it (see ``readStored()``).
    var stored: VisitorData { input.stored }

    /// Reads the visitor's data, the first time a decision of the call needs it; each decision
    /// then keeps it current with what it stored, so a call reads the store once.
    mutating func readStored() {
        guard !storedRead else { return }
        input.stored = runtime.ports.visitorStore.data(for: key) ?? VisitorData()
        storedRead = true
    }

    // MARK: Hooks

    /// The hooks' view of an evaluation about to start, `nil` when there are no hooks; their
    /// `before` stage has run.
    @inline(__always)
    func startHooks(_ kind: HookContext.FlagKind, _ key: String) -> HookContext? {
        guard hasHooks else { return nil }
        return runBeforeHooks(kind, key)
    }

    private func runBeforeHooks(_ kind: HookContext.FlagKind, _ key: String) -> HookContext? {
        let context = HookContext(flagKind: kind, key: key, visitorId: visitorId, attributes: input.attributes)
        runtime.runHooks(hooks, .before) { try $0.before(context) }
        return context
    }

    // MARK: Experiences

    /// How a decision of one experience came about.
    enum DecisionSource {
        /// A QA override forced the variation.
        case forced
        /// A preview forced the variation.
        case previewed
        /// The engine decided, finding this.
        case decided(ExperienceDecision)
    }

    /// One experience decided: the index of its variation in the experience's variations and
    /// how it came about.
    struct Outcome {
        var variationIndex: Int?
        var source: DecisionSource
    }

    /// The experience with `key` (at `position`, `nil` when no experience has it), decided with
    /// the call's hooks around it; its detail in `detail` when `detailed` (or hooks asked for it).
    ///
    /// `installed` is the decider's own config, passed so that a mutating call borrows it.
    mutating func experience(_ key: String, at position: Int?, in installed: InstalledConfig, exposure: Exposure, detailed: Bool,
                             detail: inout VariationDetail?) -> BucketedVariation? {
        let hook = startHooks(.experience, key)
        let value: BucketedVariation?
        if let position {
            (value, detail) = installed.withExperience(at: position) { experience, ids in
                let outcome = decide(experience, ids, at: position, in: installed, exposure: exposure)
                let value = Self.variation(outcome, of: experience)
                return (value, detailed || hook != nil ? Self.detail(outcome, of: experience, in: installed, value: value) : nil)
            }
        } else {
            runtime.log.warn("no experience has the key \"\(key)\"",
                             metadata: ["convert.experience": key, "convert.reason": "experienceNotFound"])
            value = nil
            detail = VariationDetail(experienceKey: key, value: nil, reason: .error, decisionReason: .experienceNotFound,
                                     errorCode: .flagNotFound, gate: nil)
        }
        if let hook, let detail { runtime.finishHooks(hooks, hook, .variation(detail)) }
        return value
    }

    /// Decides `experience` (at `position` in the config), then stores, tracks and announces
    /// what changed.
    mutating func decide(_ experience: Experience, _ ids: StoredExperienceIds, at position: Int, in installed: InstalledConfig,
                         exposure: Exposure) -> Outcome {
        if let forced = forcedVariation(experience) { return Outcome(variationIndex: forced, source: .forced) }
        if let previewed = previewVariation(experience) { return Outcome(variationIndex: previewed, source: .previewed) }
        readStored()
        // The memo (two words) is copied out for the engine's run, so `input` is read in place.
        var memo = locations
        let decision = DecisionEngine.decide(experience, at: position, in: installed, for: input, memo: &memo)
        locations = memo
        if decision.reason == .audienceNotMatched {
            runtime.log.debug("experience \(experience.key): no audience matched the visitor's attributes, no variation",
                              metadata: ["convert.experience": experience.key, "convert.reason": "audienceNotMatched",
                                         "convert.visitor": visitorId.count <= 64 ? visitorId : String(visitorId.prefix(64)) + "…"])
        }
        for key in decision.unresolvedExperienceKeys {
            runtime.log.warn("experience \(experience.key): mutual-exclusion rule names unknown experience key \"\(key)\"",
                             metadata: ["convert.experience": experience.key])
        }
        // A preview records nothing, nor does a visitor who has not consented.
        guard preview == nil, consented else { return Outcome(variationIndex: decision.variationIndex, source: .decided(decision)) }
        let recorded = record(decision, experience, ids, at: position, exposure: exposure)
        if let data = recorded.data { input.stored = data }
        return Outcome(variationIndex: recorded.variationIndex, source: .decided(decision))
    }

    /// The variation `outcome` gives in `experience`.
    static func variation(_ outcome: Outcome, of experience: Experience) -> BucketedVariation? {
        guard let index = outcome.variationIndex else { return nil }
        let variation = experience.variations[index]
        switch outcome.source {
        case .forced:
            return BucketedVariation(experience: experience, variation: variation, isStored: false, isPreview: false,
                                     isForced: true)
        case .previewed:
            return BucketedVariation(experience: experience, variation: variation, isStored: false, isPreview: true)
        case .decided(let decision):
            return BucketedVariation(experience: experience, variation: variation, isStored: !decision.isNew,
                                     isPreview: false)
        }
    }

    /// Why `outcome` came about, as hooks see it: the reason of ``detail(_:of:value:)`` alone.
    static func reason(_ outcome: Outcome, of experience: Experience) -> EvaluationReason {
        switch outcome.source {
        case .forced, .previewed: .static
        case .decided(let decision): decision.reason.evaluation(targeted: decision.targeted(experience)).0
        }
    }

    /// `outcome` described: reasons, error code, gate.
    static func detail(_ outcome: Outcome, of experience: Experience, in installed: InstalledConfig,
                       value: BucketedVariation?) -> VariationDetail {
        switch outcome.source {
        case .forced:
            return VariationDetail(experienceKey: experience.key, value: value, reason: .static, decisionReason: .forced,
                                   errorCode: nil, gate: nil)
        case .previewed:
            return VariationDetail(experienceKey: experience.key, value: value, reason: .static, decisionReason: .preview,
                                   errorCode: nil, gate: nil)
        case .decided(let decision):
            let (reason, error) = decision.reason.evaluation(targeted: decision.targeted(experience))
            return VariationDetail(experienceKey: experience.key, value: value, reason: reason,
                                   decisionReason: decision.reason, errorCode: error,
                                   gate: decision.gate(experience, installed))
        }
    }

    /// How the experience at `position` would be decided, check by check, storing, tracking and
    /// announcing nothing: the same engine run as a decision, with a tracer that keeps the steps.
    mutating func trace(_ position: Int) -> DecisionTrace {
        let experience = installed.experiences[position]
        if let index = forcedVariation(experience) {
            let forced = experience.variations[index]
            return DecisionTrace(experienceKey: experience.key, experienceId: experience.id, visitorId: visitorId,
                                 steps: [.forced(variationId: forced.id)], reason: .forced,
                                 variationId: forced.id, variationKey: forced.key)
        }
        if let index = previewVariation(experience) {
            let forced = experience.variations[index]
            return DecisionTrace(experienceKey: experience.key, experienceId: experience.id, visitorId: visitorId,
                                 steps: [.preview(variationId: forced.id)], reason: .preview,
                                 variationId: forced.id, variationKey: forced.key)
        }
        readStored()
        let (decision, steps) = DecisionEngine.trace(experience, at: position, in: installed, for: input)
        let variation = decision.variation(in: experience)
        return DecisionTrace(experienceKey: experience.key, experienceId: experience.id, visitorId: visitorId,
                             steps: steps, reason: decision.reason, variationId: variation?.id,
                             variationKey: variation?.key)
    }

    /// The index of the variation a QA override forces for this visitor, when it names one of
    /// the experience's.
    private func forcedVariation(_ experience: Experience) -> Int? {
        guard let wanted = overrides?.variation(forExperience: experience.key, visitorId: visitorId) else { return nil }
        if let index = experience.variationIndex(key: wanted) ?? experience.variationIndex(id: wanted) { return index }
        runtime.log.warn("override for experience \(experience.key): no variation has the key or id \"\(wanted)\"; ignored",
                         metadata: ["convert.experience": experience.key])
        return nil
    }

    /// The index of the variation a preview forces, for the experience it names.
    private func previewVariation(_ experience: Experience) -> Int? {
        guard let preview, preview.experienceId == experience.id else { return nil }
        return experience.variationIndex(id: preview.variationId)
    }
}
