import ConvertEvents
import ConvertTracking
import ConvertModel
import ConvertRules
import ConvertStorage
import ConvertVisitor

/// What storing a decision changed: the variation that holds (a concurrent decision for the same
/// visitor may have stored first), whether it is new, the locations it activated and
/// deactivated (bits over the plan's location positions), and the visitor's segments.
struct RecordedDecision {
    /// The index of the variation in the plan's variations.
    var variationIndex: Int?
    /// The visitor's data after the store was written; `nil` when nothing was written.
    var data: VisitorData?
    var isNew = false
    var activated: UInt64 = 0
    var deactivated: UInt64 = 0
    var segments: VisitorSegments?
}

extension Decider {
    /// Stores, tracks and announces what a decision found; returns the index of the variation
    /// that holds and the data stored.
    func record(_ decision: ExperienceDecision, _ plan: Experience, _ ids: StoredExperienceIds, at position: Int,
                exposure: Exposure) -> RecordedDecision {
        if decision.matchedAudiences != 0 {
            runtime.events.publish(.audiences, listening: listening, .audiences(AudiencesPayload(
                visitorId: visitorId,
                audienceIds: Self.positions(decision.matchedAudiences, in: plan.audienceIndexes)
                    .map { installed.config.audiences[$0].id })))
        }
        // Checked against what was read first, so an unchanged visitor costs no store write.
        if !decision.isNew {
            let expected = Self.locationChanges(decision, plan, installed.locationKeys, stored)
            guard expected.activate | expected.deactivate != 0 else { return RecordedDecision(variationIndex: decision.variationIndex) }
        }
        let locationKeys = installed.locationKeys
        let events = runtime.events

        let tracks = exposure == .automatic && trackingEnabled
        // Only a manual decision carries a marker (interned with the config).
        let pending = exposure == .manual && decision.isNew ? decision.variationIndex.map { ids.pendingMarkers[$0] } : nil
        // A decision whose event is never sent says so, for snapshots.
        let withheld = exposure == .none && decision.isNew ? decision.variationIndex.map { ids.withheldMarkers[$0] } : nil
        // A variation another instance stored first is kept here too, and tracked there only.
        var adopted: Int?
        // A flag, not the store: the optional existential would be copied and destroyed on every
        // decision that stores, shared store or not.
        var claimsLater = false
        if decision.isNew, runtime.sharesVisitorData, let fresh = decision.variationIndex, let shared = runtime.sharedStore {
            switch shared.firstDecisionClaim {
            case .beforeAnswering:
                if let claim = shared.claimFirstDecision(key, experienceId: plan.id, variationId: plan.variations[fresh].id) {
                    if claim.variationId == plan.variations[fresh].id {
                        // Another instance that decided the same stored it first: it sent the event.
                        if !claim.isFirst { adopted = fresh }
                    } else if let index = plan.variationIndex(id: claim.variationId) {
                        adopted = index
                    }
                }
            case .afterAnswering:
                claimsLater = true
            case .never:
                break
            }
        }
        let recorded = runtime.ports.visitorStore.update(key) { data -> RecordedDecision in
            let changes = Self.locationChanges(decision, plan, locationKeys, data)
            if data.isEmpty { data.reserve(extra: 2 + changes.activate.nonzeroBitCount) }
            var outcome = RecordedDecision(variationIndex: adopted ?? decision.variationIndex)
            for (bitPosition, index) in plan.locationIndexes.enumerated() where bitPosition < 64 {
                let bit: UInt64 = 1 << UInt64(bitPosition)
                if changes.activate & bit != 0, data.insertLocation(locationKeys[index]) { outcome.activated |= bit }
                if changes.deactivate & bit != 0, data.removeLocation(locationKeys[index]) { outcome.deactivated |= bit }
            }
            if decision.isNew, let freshIndex = adopted ?? decision.variationIndex {
                if let existing = data.variation(forExperience: ids.experience),
                   existing != stored.variation(forExperience: ids.experience),
                   let kept = ids.variationIndex(of: existing) {
                    outcome.variationIndex = kept
                } else {
                    data.setVariation(ids.variations[freshIndex], forExperience: ids.experience)
                    outcome.isNew = adopted == nil
                    if outcome.isNew, let marker = pending ?? withheld { data.setExposureMarker(marker, experienceId: plan.id) }
                    // Only a tracking event reads them.
                    if tracks { outcome.segments = data.storedSegments }
                }
            }
            outcome.data = data
            return outcome
        }
        announceLocations(recorded, plan, listening: listening)
        if recorded.isNew, let index = recorded.variationIndex {
            let event = tracks ? TrackingEvent(
                accountId: installed.accountId, projectId: installed.projectId, visitorId: visitorId,
                segments: recorded.segments, payload: .bucketing(experienceId: plan.id, variationId: plan.variations[index].id))
                : nil
            if claimsLater, let claimLater = runtime.sharedStore {
                let variation = plan.variations[index]
                trackOnceClaimed(claimLater, key, position, BucketingPayload(
                    visitorId: visitorId, experienceId: plan.id, experienceKey: plan.key, variationId: variation.id,
                    variationKey: variation.key), event, pending: pending)
            } else {
                // A refused event (too large, queue full) was never tracked: the hooks are not told.
                if let event, runtime.ports.trackingSink.offer(event) {
                    runtime.announceTracked(event, to: trackingHooks)
                }
                events.publish(.bucketing, listening: listening, .bucketing(BucketingPayload(
                    visitorId: visitorId, experienceId: plan.id, experienceKey: plan.key,
                    variationId: plan.variations[index].id, variationKey: plan.variations[index].key)))
            }
        }
        return recorded
    }

    /// Claims the new decision in the shared store after the answer; only when this instance's
    /// claim holds is the bucketing event sent and announced. A claim another instance won
    /// replaces the local decision with the stored one, for this visitor's next answers.
    private func trackOnceClaimed(_ shared: any SharedVisitorDataStore, _ key: VisitorKey, _ position: Int,
                                  _ bucketing: BucketingPayload, _ event: TrackingEvent?, pending: InternedId?) {
        let runtime = self.runtime, hooks = trackingHooks, listening = self.listening
        let experience = installed.experiences[position], ids = installed.storedIds[position]
        Task {
            let claim = await shared.claimFirstDecisionLater(key, experienceId: bucketing.experienceId,
                                                             variationId: bucketing.variationId)
            if let claim, !claim.isFirst {
                // Another instance stored its decision first and sent the event; a different
                // variation replaces the local one for this visitor's next answers.
                let replaced = claim.variationId != bucketing.variationId ? experience.variationIndex(id: claim.variationId) : nil
                if replaced != nil || pending != nil {
                    runtime.ports.visitorStore.update(key) { data in
                        if let replaced { data.setVariation(ids.variations[replaced], forExperience: ids.experience) }
                        // Its exposure is the other instance's to send.
                        if let pending { data.removeGoal(pending) }
                    }
                }
                return
            }
            // Unreachable shared store: the local decision stands and is tracked here.
            if let event, runtime.ports.trackingSink.offer(event) {
                runtime.announceTracked(event, to: hooks)
            }
            runtime.events.publish(.bucketing, listening: listening, .bucketing(bucketing))
        }
    }

    /// Locations to activate (matched, not stored) and deactivate (unmatched, stored), as bits.
    private static func locationChanges(_ decision: ExperienceDecision, _ plan: Experience, _ locationKeys: [InternedId],
                                        _ data: VisitorData) -> (activate: UInt64, deactivate: UInt64) {
        guard decision.locationsEvaluated else { return (0, 0) }
        var activate: UInt64 = 0, deactivate: UInt64 = 0
        for (bitPosition, index) in plan.locationIndexes.enumerated() where bitPosition < 64 {
            let bit: UInt64 = 1 << UInt64(bitPosition)
            let known = data.containsLocation(locationKeys[index])
            if decision.matchedLocations & bit != 0, !known { activate |= bit }
            if decision.unmatchedLocations & bit != 0, known { deactivate |= bit }
        }
        return (activate, deactivate)
    }

    private func announceLocations(_ recorded: RecordedDecision, _ plan: Experience, listening: UInt32) {
        guard recorded.activated | recorded.deactivated != 0,
              SystemEventHub.listens(listening, to: .locationActivated) || SystemEventHub.listens(listening, to: .locationDeactivated)
        else { return }
        let locations = installed.config.locations
        func locationKey(_ index: Int) -> String { locations[index].key ?? locations[index].id }
        for index in Self.positions(recorded.activated, in: plan.locationIndexes) {
            runtime.events.publish(.locationActivated, listening: listening, .locationActivated(LocationActivatedPayload(
                visitorId: visitorId, locationId: locations[index].id, locationKey: locationKey(index),
                properties: input.locationProperties.mapValues(\.javaScriptString))))
        }
        for index in Self.positions(recorded.deactivated, in: plan.locationIndexes) {
            runtime.events.publish(.locationDeactivated, listening: listening, .locationDeactivated(LocationDeactivatedPayload(
                visitorId: visitorId, locationId: locations[index].id, locationKey: locationKey(index))))
        }
    }

    /// The elements of `indexes` at the set bits of `bits`.
    static func positions(_ bits: UInt64, in indexes: [Int]) -> [Int] {
        guard bits != 0 else { return [] }
        return indexes.enumerated().compactMap { position, index in
            position < 64 && bits & (1 << UInt64(position)) != 0 ? index : nil
        }
    }
}
