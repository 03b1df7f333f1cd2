import ConvertModel
import ConvertSynchronization

extension ConvertContext {
    /// The feature with `key` for this visitor, each time a newly installed config changes it
    /// (switched on or off, other variables, another carrier). The stream starts from the value
    /// now and yields only a different one; made before the SDK is ready, it yields the value
    /// the first config gives. Only the newest undelivered value is kept.
    ///
    /// Following is quiet: the visitor is decided again after each config as
    /// ``explanation(forFeature:)`` decides (no tracking event, no hook, no system event, nothing
    /// stored), so a visitor not yet bucketed is told the variation it would get. Call
    /// ``feature(_:typeCasting:enableTracking:)`` when the value is used, to record and track it.
    ///
    /// The stream finishes when the SDK shuts down; stopping the iteration (or cancelling its
    /// task) ends the subscription.
    ///
    /// ```swift
    /// for await feature in context.updates(forFeature: "new-checkout") { apply(feature) }
    /// ```
    public func updates(forFeature key: String, typeCasting: Bool = true) -> AsyncStream<BucketedFeature> {
        follow("updates(forFeature:)", same: ==) { $0.quietFeature(key, typeCasting: typeCasting, call: "updates(forFeature:)") }
    }

    /// The variation this visitor gets in the experience with `key`, each time a newly installed
    /// config changes it (another variation, other changes in it, or none: `nil`). Quiet and
    /// buffered as ``updates(forFeature:typeCasting:)`` is; a new traffic share that leaves the
    /// visitor where it was, or whether the variation is stored yet, does not count.
    ///
    /// ```swift
    /// for await variation in context.updates(forExperience: "checkout-test") { render(variation?.key) }
    /// ```
    public func updates(forExperience key: String) -> AsyncStream<BucketedVariation?> {
        follow("updates(forExperience:)", same: Self.sameVariation) { $0.quietVariation(key, call: "updates(forExperience:)") }
    }

    /// A stream of `decide`'s value after each installed config, yielded when not `same` as the
    /// last; `decide` answers `nil` when the context cannot decide (no config, bad visitor id).
    private func follow<Value: Sendable>(_ call: String, same: @escaping @Sendable (Value, Value) -> Bool,
                                         decide: @escaping @Sendable (ConvertContext) -> Value?) -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream<Value>.makeStream(bufferingPolicy: .bufferingNewest(1))
        // `nil` until a config gave a value; the lock also keeps re-decisions of two installs in order.
        let last = Locked<Value?>(decide(self))
        let watchers = runtime.watchers
        let id = watchers.add(changed: { [self] _ in
            last.withValue { last in
                guard let value = decide(self) else { return }
                if let known = last, same(known, value) { return }
                last = value
                continuation.yield(value)
            }
        }, finish: { continuation.finish() })
        if let id { continuation.onTermination = { _ in watchers.remove(id) } }
        return stream
    }

    /// The same variation with the same changes, as the visitor sees it: its traffic share or
    /// whether it is stored yet does not count.
    private static func sameVariation(_ a: BucketedVariation?, _ b: BucketedVariation?) -> Bool {
        a?.experienceId == b?.experienceId && a?.id == b?.id && a?.key == b?.key && a?.changes == b?.changes
            && a?.isForced == b?.isForced && a?.isPreview == b?.isPreview
    }

    /// The decider of a quiet re-decision: nothing stored, no warning for a known refusal.
    private func quietDecider(_ call: String) -> Decider? {
        guard visitorIdProblem == nil, runtime.current != nil else { return nil }
        return begin(call, recording: false)
    }

    /// The variation the visitor gets in the experience `key`, decided as an explanation is
    /// (nothing stored, tracked or announced); `.none` when the context cannot decide.
    func quietVariation(_ key: String, call: String) -> BucketedVariation?? {
        guard var decider = quietDecider(call) else { return .none }
        guard let position = decider.installed.experiencePosition(key: key) else { return .some(nil) }
        let trace = decider.trace(position)
        let experience = decider.installed.experiences[position]
        guard let id = trace.variationId, let index = experience.variationIndex(id: id) else { return .some(nil) }
        return .some(BucketedVariation(experience: experience, variation: experience.variations[index],
                                       isStored: trace.reason == .storedDecision, isPreview: trace.reason == .preview,
                                       isForced: trace.reason == .forced))
    }

    /// The feature `key` as the visitor gets it, resolved over its carriers as
    /// ``feature(_:typeCasting:enableTracking:)`` does, but with each carrier decided as an
    /// explanation is; `nil` when the context cannot decide.
    func quietFeature(_ key: String, typeCasting: Bool, call: String) -> BucketedFeature? {
        guard var decider = quietDecider(call) else { return nil }
        guard let position = decider.config.featureIndex(key: key) else { return .disabled(key: key, feature: nil) }
        let plan = decider.installed.featurePlans[position]
        if let forced = decider.forcedFeature(plan) { return forced }
        for (carrier, index) in plan.carriers.enumerated() {
            let trace = decider.trace(index)
            guard let id = trace.variationId, let variationIndex = decider.installed.experiences[index].variationIndex(id: id)
            else { continue }
            if let result = plan.result(carrier: carrier, variationIndex: variationIndex, typeCasting: typeCasting) {
                return result
            }
        }
        return plan.disabled
    }
}
