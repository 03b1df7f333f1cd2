import ConvertEvents
import ConvertModel
import ConvertRules
import ConvertStorage
import ConvertSupport

extension ConvertContext {
    /// Decides the experience with `key` for this visitor: the stored decision when there is one
    /// and the visitor still qualifies, otherwise fresh bucketing (stored, tracked, announced).
    ///
    /// - Parameters:
    ///   - key: the experience key.
    ///   - enableTracking: `false` keeps this call's bucketing event from being sent.
    /// - Returns: the variation, or `nil` when the visitor does not qualify, is not bucketed,
    ///   the key is unknown or the SDK is not ready.
    public func runExperience(_ key: String, enableTracking: Bool = true) async -> BucketedVariation? {
        guard let installed = installedConfig(for: "runExperience") else { return nil }
        return decide(key: key, installed, snapshot, enableTracking: enableTracking)
    }

    /// Decides every experience in the config, in config order; returns those with a variation.
    public func runExperiences(enableTracking: Bool = true) async -> [BucketedVariation] {
        guard let installed = installedConfig(for: "runExperiences") else { return [] }
        let snapshot = self.snapshot
        return installed.config.experiences.indices.compactMap {
            decide(position: $0, installed, snapshot, enableTracking: enableTracking)
        }
    }

    /// Explains how the experience with `key` would be decided for this visitor, check by check,
    /// without storing, tracking or announcing anything.
    public func explainExperience(_ key: String) async -> DecisionTrace {
        guard let installed = core.current else {
            return DecisionTrace(experienceKey: key, experienceId: nil, visitorId: visitorId, steps: [.notReady],
                                 reason: .notReady, variationId: nil, variationKey: nil)
        }
        guard let position = installed.experiencePosition(key: key) else {
            return DecisionTrace(experienceKey: key, experienceId: nil, visitorId: visitorId,
                                 steps: [.experienceNotFound(key: key)], reason: .experienceNotFound,
                                 variationId: nil, variationKey: nil)
        }
        let experience = installed.config.experiences[position]
        let snapshot = self.snapshot
        if let forced = previewVariation(experience, snapshot) {
            return DecisionTrace(experienceKey: key, experienceId: experience.id, visitorId: visitorId,
                                 steps: [.preview(variationId: forced.id)], reason: .preview,
                                 variationId: forced.id, variationKey: forced.key)
        }
        var tracer = RecordingTracer()
        let decision = DecisionEngine.decide(position, input(installed, snapshot), tracer: &tracer)
        return DecisionTrace(experienceKey: key, experienceId: experience.id, visitorId: visitorId, steps: tracer.steps,
                             reason: decision.reason, variationId: decision.variation?.id,
                             variationKey: decision.variation?.key)
    }

    func installedConfig(for call: String) -> InstalledConfig? {
        if let visitorIdProblem {
            core.log.warn("\(call): \(visitorIdProblem); degraded result")
            return nil
        }
        if let installed = core.current {
            storeDeferredCreationSegments(installed)
            return installed
        }
        core.log.warn("\(call) for visitor \(loggedVisitorId) before the SDK is ready: degraded result")
        return nil
    }

    func input(_ installed: InstalledConfig, _ snapshot: Snapshot) -> DecisionInput {
        let key = storeKey(installed)
        return DecisionInput(installed: installed, visitorId: visitorId, key: key,
                             stored: core.ports.visitorStore.data(for: key) ?? VisitorData(),
                             attributes: snapshot.attributes, locationProperties: snapshot.locationProperties,
                             hashSeed: core.configuration.hashSeed)
    }

    /// This visitor's key in the visitor store.
    func storeKey(_ installed: InstalledConfig) -> VisitorKey {
        installed.visitorKey(visitorId, visitorHash: visitorHash)
    }

    func decide(key: String, _ installed: InstalledConfig, _ snapshot: Snapshot, enableTracking: Bool) -> BucketedVariation? {
        guard let position = installed.experiencePosition(key: key) else {
            core.log.warn("no experience has the key \"\(key)\"")
            return nil
        }
        return decide(position: position, installed, snapshot, enableTracking: enableTracking)
    }

    private func previewVariation(_ experience: Experience, _ snapshot: Snapshot) -> Variation? {
        guard let preview = snapshot.preview, preview.experienceId == experience.id else { return nil }
        return experience.variation(id: preview.variationId)
    }

    func decide(position: Int, _ installed: InstalledConfig, _ snapshot: Snapshot,
                enableTracking: Bool) -> BucketedVariation? {
        let plan = installed.plans[position]
        if let forced = previewVariation(plan.experience, snapshot) {
            return BucketedVariation(experience: plan.experience, variation: forced, isStored: false, isPreview: true)
        }
        var tracer = SilentTracer()
        let input = input(installed, snapshot)
        let decision = DecisionEngine.decide(position, input, tracer: &tracer)
        for key in decision.unresolvedExperienceKeys {
            core.log.warn("experience \(plan.key): mutual-exclusion rule names unknown experience key \"\(key)\"")
        }
        let quiet = snapshot.preview != nil
        var variation = decision.variation
        if !quiet {
            variation = record(decision, position, installed, input, enableTracking: enableTracking)
        }
        guard let variation else { return nil }
        return BucketedVariation(experience: plan.experience, variation: variation, isStored: !decision.isNew,
                                 isPreview: false)
    }

    /// Stores, tracks and announces what a decision found; returns the variation that holds
    /// (a concurrent decision for the same visitor may have stored first).
    private func record(_ decision: ExperienceDecision, _ position: Int, _ installed: InstalledConfig,
                        _ input: DecisionInput, enableTracking: Bool) -> Variation? {
        let plan = installed.plans[position]
        let events = core.events
        if decision.matchedAudiences != 0 {
            events.fire(.audiences, .audiences(AudiencesPayload(
                visitorId: visitorId,
                audienceIds: Self.positions(decision.matchedAudiences, in: plan.audienceIndexes)
                    .map { installed.config.audiences[$0].id })))
        }
        let locations = installed.config.locations
        let locationKeys = installed.locationKeys
        let locationIndexes = plan.locationIndexes
        var matched: UInt64 = 0, unmatched: UInt64 = 0
        if decision.locationsEvaluated {
            // Only changes against the stored set reach the store.
            let stored = input.stored
            for (bitPosition, index) in locationIndexes.enumerated() where bitPosition < 64 {
                let bit: UInt64 = 1 << UInt64(bitPosition)
                let known = stored.containsLocation(locationKeys[index])
                if decision.matchedLocations & bit != 0, !known { matched |= bit }
                if decision.unmatchedLocations & bit != 0, known { unmatched |= bit }
            }
        }
        guard decision.isNew || matched | unmatched != 0 else { return decision.variation }

        let outcome = core.ports.visitorStore.update(input.key) { data -> (Variation?, Bool, UInt64, UInt64, VisitorSegments?) in
            if data.isEmpty { data.reserve(extra: 2 + matched.nonzeroBitCount) }
            var activated: UInt64 = 0, deactivated: UInt64 = 0
            for (bitPosition, index) in locationIndexes.enumerated() where bitPosition < 64 {
                let bit: UInt64 = 1 << UInt64(bitPosition)
                if matched & bit != 0, data.insertLocation(locationKeys[index]) { activated |= bit }
                if unmatched & bit != 0, data.removeLocation(locationKeys[index]) { deactivated |= bit }
            }
            guard decision.isNew, let fresh = decision.variation, let freshIndex = decision.variationIndex else {
                return (decision.variation, false, activated, deactivated, data.storedSegments)
            }
            if let existing = data.variation(forExperience: plan.id),
               existing != input.stored.variation(forExperience: plan.id),
               let kept = plan.variationIndex(of: existing) {
                return (plan.variationModels[kept], false, activated, deactivated, data.storedSegments)
            }
            data.setVariation(plan.variations[freshIndex], forExperience: plan.id)
            return (fresh, true, activated, deactivated, data.storedSegments)
        }
        let (variation, isNew, activated, deactivated, segments) = outcome
        if activated | deactivated != 0 {
            func locationKey(_ index: Int) -> String { locations[index].key ?? locations[index].id }
            for index in Self.positions(activated, in: locationIndexes) {
                events.fire(.locationActivated, .locationActivated(LocationActivatedPayload(
                    visitorId: visitorId, locationId: locations[index].id, locationKey: locationKey(index),
                    properties: input.locationProperties.mapValues(\.javaScriptString))))
            }
            for index in Self.positions(deactivated, in: locationIndexes) {
                events.fire(.locationDeactivated, .locationDeactivated(LocationDeactivatedPayload(
                    visitorId: visitorId, locationId: locations[index].id, locationKey: locationKey(index))))
            }
        }
        if isNew, let variation {
            if enableTracking && core.isTrackingEnabled {
                core.ports.trackingSink.enqueue(TrackingEvent(
                    accountId: installed.config.accountId, projectId: installed.config.project.id, visitorId: visitorId,
                    segments: segments,
                    payload: .bucketing(experienceId: plan.experienceId, variationId: variation.id)))
            }
            events.fire(.bucketing, .bucketing(BucketingPayload(visitorId: visitorId, experienceId: plan.experienceId,
                                                    experienceKey: plan.key, variationId: variation.id,
                                                    variationKey: variation.key)))
        }
        return variation
    }

    /// The elements of `indexes` at the set bits of `bits`.
    private static func positions(_ bits: UInt64, in indexes: [Int]) -> [Int] {
        guard bits != 0 else { return [] }
        return indexes.enumerated().compactMap { position, index in
            position < 64 && bits & (1 << UInt64(position)) != 0 ? index : nil
        }
    }
}
