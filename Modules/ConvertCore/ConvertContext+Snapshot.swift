import ConvertModel
import ConvertRules
import ConvertStorage
import Foundation

extension ConvertContext {
    /// Decides every experience and feature for this visitor, as ``variations(exposure:)`` and
    /// ``features(typeCasting:exposure:)`` do (storing, tracking and announcing the same), and
    /// returns the decisions as a ``DecisionSnapshot`` for a client to render. All are decided
    /// in one call, on one config, each experience once; each experience says whether its
    /// bucketing event was sent (``DecisionSnapshot/DecidedExperience/isTracked``).
    ///
    /// An SDK made from the snapshot sends its own bucketing events when the client decides
    /// (``ConvertSwiftSDK/init(snapshot:configuration:ports:)``); take the snapshot with
    /// ``Exposure/none`` then, so each decision is tracked once, by the client.
    ///
    /// ```swift
    /// guard let snapshot = context.snapshot(exposure: .none) else { return }
    /// response.body = try snapshot.jsonData()
    /// ```
    ///
    /// - Returns: `nil` when no config is installed yet or the visitor id is unusable.
    public func snapshot(exposure: Exposure = .automatic) -> DecisionSnapshot? {
        // One call: every experience and feature is decided on the config read at its start,
        // and a carrier experience decided for the variations is not decided again for a feature.
        guard var decider = begin("snapshot()") else { return nil }
        let installed = decider.installed
        var decided = DecidedCarriers()
        var variations: [BucketedVariation] = []
        var detail: VariationDetail?
        for (position, experience) in installed.experiences.enumerated() {
            let variation = decider.experience(experience.key, at: position, in: installed, exposure: exposure, detailed: false,
                                               detail: &detail)
            let variationIndex = variation.flatMap { experience.variationIndex(id: $0.id) }
            // As the feature calls would have remembered it: the reason for hooks, the detail for
            // hooks that read a feature's experiences (both there only when hooks run).
            decided.remember(position, variationIndex, detail?.reason ?? .default)
            if let detail { decided.remember(position, detail, variationIndex) }
            if let variation { variations.append(variation) }
        }
        let plans = installed.featurePlans
        var features: [BucketedFeature] = []
        features.reserveCapacity(plans.count)
        var featureDetail: FeatureDetail?
        for position in plans.indices {
            features.append(decider.feature(plans[position].key, at: position, in: installed, typeCasting: true, exposure: exposure,
                                            detailed: false, decided: &decided, detail: &featureDetail))
        }
        return snapshot(of: decider, variations, features, exposure: exposure)
    }

    private func snapshot(of decider: Decider, _ variations: [BucketedVariation], _ features: [BucketedFeature],
                          exposure: Exposure) -> DecisionSnapshot {
        let installed = decider.installed
        // What this call sends for a decision it makes, and takes a stored decision to have sent
        // when it was made (a stored decision is never sent again).
        let sendsAtDecision = exposure == .automatic && decider.trackingEnabled && decider.records
        let experiences = variations.map { decided in
            DecisionSnapshot.DecidedExperience(
                experienceId: decided.experienceId, experienceKey: decided.experienceKey, variationId: decided.id,
                variationKey: decided.key, isTracked: decider.exposureSent(decided, sendsAtDecision: sendsAtDecision),
                changes: decided.changes.map {
                    DecisionSnapshot.Change(id: $0.id, type: $0.type, featureId: $0.featureId, variables: $0.variables)
                })
        }
        let decidedFeatures = features.map { feature in
            DecisionSnapshot.DecidedFeature(
                key: feature.key, id: feature.id ?? "", name: feature.name, status: feature.status, experienceId: feature.experienceId,
                experienceKey: feature.experienceKey, variationId: feature.variationId,
                variationKey: feature.variationKey, variables: feature.isEnabled ? feature.variables : [:])
        }
        return DecisionSnapshot(visitorId: visitorId, accountId: installed.config.accountId,
                                projectId: installed.config.project.id, configRevision: installed.revision,
                                takenAt: Date(), experiences: experiences, features: decidedFeatures,
                                goals: installed.config.goals.map { DecisionSnapshot.SnapshotGoal(id: $0.id, key: $0.key) })
    }
}

extension Decider {
    /// What the visitor's data records of the exposure of `variationId` in `experienceId`: sent
    /// (by `trackExposure`, here or by another instance on the same visitor data), awaiting
    /// `trackExposure`, or nothing (`nil`: the decision was made with ``Exposure/automatic`` or
    /// ``Exposure/none``, or not yet). The one place a snapshot reads exposure records.
    func recordedExposure(experienceId: String, variationId: String) -> RecordedExposure? {
        // A marker never interned is in no visitor's data.
        let pool = IdPool.shared
        if let sent = pool.existing(ExposureMarker.sent(experienceId: experienceId, variationId: variationId)),
           stored.containsGoal(sent) {
            return .sent
        }
        if let pending = pool.existing(ExposureMarker.pending(experienceId: experienceId, variationId: variationId)),
           stored.containsGoal(pending) {
            return .awaiting
        }
        if let withheld = pool.existing(ExposureMarker.withheld(experienceId: experienceId, variationId: variationId)),
           stored.containsGoal(withheld) {
            return .withheld
        }
        return nil
    }

    /// Whether the bucketing event of `decided` went out, as this call's decisions left the
    /// visitor's data: queued by this call for a new decision, recorded as sent, or, for a
    /// stored decision of which nothing is recorded, sent when it was made if this call would
    /// send it (`sendsAtDecision`). Forced and previewed variations are never sent.
    func exposureSent(_ decided: BucketedVariation, sendsAtDecision: Bool) -> Bool {
        guard !decided.isForced, !decided.isPreview else { return false }
        if !decided.isStored, sendsAtDecision { return true }
        switch recordedExposure(experienceId: decided.experienceId, variationId: decided.id) {
        case .sent: return true
        case .awaiting, .withheld: return false
        case nil: return decided.isStored && sendsAtDecision
        }
    }
}

/// What a visitor's data records of a decision's exposure.
enum RecordedExposure {
    /// Its bucketing event was sent.
    case sent
    /// It waits for ``ConvertContext/trackExposure(forExperience:)``.
    case awaiting
    /// It was made with ``Exposure/none``: never sent.
    case withheld
}
