import ConvertEvents
import ConvertModel
import ConvertRules
import ConvertStorage

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
        return installed.config.experiences.compactMap {
            decide(experience: $0, installed, snapshot, enableTracking: enableTracking)
        }
    }

    /// Explains how the experience with `key` would be decided for this visitor, check by check,
    /// without storing, tracking or announcing anything.
    public func explainExperience(_ key: String) async -> DecisionTrace {
        guard let installed = core.current else {
            return DecisionTrace(experienceKey: key, experienceId: nil, visitorId: visitorId, steps: [.notReady],
                                 reason: .notReady, variationId: nil, variationKey: nil)
        }
        guard let experience = installed.config.experience(key: key) else {
            return DecisionTrace(experienceKey: key, experienceId: nil, visitorId: visitorId,
                                 steps: [.experienceNotFound(key: key)], reason: .experienceNotFound,
                                 variationId: nil, variationKey: nil)
        }
        let snapshot = self.snapshot
        if let forced = previewVariation(experience, snapshot) {
            return DecisionTrace(experienceKey: key, experienceId: experience.id, visitorId: visitorId,
                                 steps: [.preview(variationId: forced.id)], reason: .preview,
                                 variationId: forced.id, variationKey: forced.key)
        }
        var tracer = RecordingTracer()
        let decision = DecisionEngine.decide(experience, input(installed, snapshot), tracer: &tracer)
        return DecisionTrace(experienceKey: key, experienceId: experience.id, visitorId: visitorId, steps: tracer.steps,
                             reason: decision.reason, variationId: decision.variation?.id,
                             variationKey: decision.variation?.key)
    }

    func installedConfig(for call: String) -> InstalledConfig? {
        if let visitorIdProblem {
            core.log.warn("\(call): \(visitorIdProblem); degraded result")
            return nil
        }
        if let installed = core.current { return installed }
        core.log.warn("\(call) for visitor \(loggedVisitorId) before the SDK is ready: degraded result")
        return nil
    }

    func input(_ installed: InstalledConfig, _ snapshot: Snapshot) -> DecisionInput {
        let key = installed.storeKey(visitorId)
        return DecisionInput(config: installed.config, environment: installed.environment, visitorId: visitorId,
                             storeKey: key, stored: core.ports.visitorStore.data(for: key) ?? VisitorData(),
                             attributes: snapshot.attributes, locationProperties: snapshot.locationProperties,
                             hashSeed: core.configuration.hashSeed)
    }

    func decide(key: String, _ installed: InstalledConfig, _ snapshot: Snapshot, enableTracking: Bool) -> BucketedVariation? {
        guard let experience = installed.config.experience(key: key) else {
            core.log.warn("no experience has the key \"\(key)\"")
            return nil
        }
        return decide(experience: experience, installed, snapshot, enableTracking: enableTracking)
    }

    private func previewVariation(_ experience: Experience, _ snapshot: Snapshot) -> Variation? {
        guard let preview = snapshot.preview, preview.experienceId == experience.id else { return nil }
        return experience.variation(id: preview.variationId)
    }

    func decide(experience: Experience, _ installed: InstalledConfig, _ snapshot: Snapshot,
                enableTracking: Bool) -> BucketedVariation? {
        if let forced = previewVariation(experience, snapshot) {
            return BucketedVariation(experienceId: experience.id, experienceKey: experience.key,
                                     experienceName: experience.name, variation: forced, isStored: false, isPreview: true)
        }
        var tracer = SilentTracer()
        let input = input(installed, snapshot)
        let decision = DecisionEngine.decide(experience, input, tracer: &tracer)
        for key in decision.unresolvedExperienceKeys {
            core.log.warn("experience \(experience.key): mutual-exclusion rule names unknown experience key \"\(key)\"")
        }
        let quiet = snapshot.preview != nil
        var variation = decision.variation
        if !quiet {
            variation = record(decision, experience, installed, input, enableTracking: enableTracking)
        }
        guard let variation else { return nil }
        return BucketedVariation(experienceId: experience.id, experienceKey: experience.key, experienceName: experience.name,
                                 variation: variation, isStored: !decision.isNew, isPreview: false)
    }

    /// Stores, tracks and announces what a decision found; returns the variation that holds
    /// (a concurrent decision for the same visitor may have stored first).
    private func record(_ decision: ExperienceDecision, _ experience: Experience, _ installed: InstalledConfig,
                        _ input: DecisionInput, enableTracking: Bool) -> Variation? {
        let events = core.events
        if decision.matchedAudiences != 0 {
            events.fire(.audiences, .audiences(AudiencesPayload(
                visitorId: visitorId,
                audienceIds: Self.positions(decision.matchedAudiences, in: experience.audienceIndexes)
                    .map { installed.config.audiences[$0].id })))
        }
        let locations = installed.config.locations
        func locationKey(_ index: Int) -> String { locations[index].key ?? locations[index].id }
        var locationChanges = false
        if decision.locationsEvaluated {
            let stored = input.stored.locations
            for (position, index) in experience.locationIndexes.enumerated() where position < 64 {
                let bit: UInt64 = 1 << UInt64(position)
                if decision.matchedLocations & bit != 0, !stored.contains(locationKey(index)) { locationChanges = true }
                if decision.unmatchedLocations & bit != 0, !stored.isEmpty, stored.contains(locationKey(index)) {
                    locationChanges = true
                }
            }
        }
        guard decision.isNew || locationChanges else { return decision.variation }
        let matched = decision.locationsEvaluated ? Self.positions(decision.matchedLocations, in: experience.locationIndexes) : []
        let unmatched = decision.locationsEvaluated ? Self.positions(decision.unmatchedLocations, in: experience.locationIndexes) : []

        let outcome = core.ports.visitorStore.update(input.storeKey) { data -> (Variation?, Bool, [Int], [Int], VisitorSegments) in
            var activated: [Int] = [], deactivated: [Int] = []
            for index in matched where data.locations.insert(locationKey(index)).inserted {
                activated.append(index)
            }
            for index in unmatched where data.locations.remove(locationKey(index)) != nil {
                deactivated.append(index)
            }
            guard decision.isNew, let fresh = decision.variation else {
                return (decision.variation, false, activated, deactivated, data.segments)
            }
            if let existing = data.bucketing[experience.id], let kept = experience.variation(id: existing),
               existing != input.stored.bucketing[experience.id] {
                return (kept, false, activated, deactivated, data.segments)
            }
            data.bucketing[experience.id] = fresh.id
            return (fresh, true, activated, deactivated, data.segments)
        }
        let (variation, isNew, activated, deactivated, segments) = outcome
        for index in activated {
            events.fire(.locationActivated, .locationActivated(LocationActivatedPayload(
                visitorId: visitorId, locationId: locations[index].id, locationKey: locationKey(index),
                properties: input.locationProperties.mapValues(\.javaScriptString))))
        }
        for index in deactivated {
            events.fire(.locationDeactivated, .locationDeactivated(LocationDeactivatedPayload(
                visitorId: visitorId, locationId: locations[index].id, locationKey: locationKey(index))))
        }
        if isNew, let variation {
            if enableTracking && core.isTrackingEnabled {
                core.ports.trackingSink.enqueue(TrackingEvent(
                    accountId: installed.config.accountId, projectId: installed.config.project.id, visitorId: visitorId,
                    segments: segments.isEmpty ? nil : segments,
                    payload: .bucketing(experienceId: experience.id, variationId: variation.id)))
            }
            events.fire(.bucketing, .bucketing(BucketingPayload(visitorId: visitorId, experienceId: experience.id,
                                                    experienceKey: experience.key, variationId: variation.id,
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
