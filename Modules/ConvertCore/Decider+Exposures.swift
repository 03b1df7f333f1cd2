import ConvertEnvironment
import ConvertModel
import ConvertStorage
import ConvertTracking

extension Decider {
    /// Sends the bucketing event of the visitor's stored manual decision for the experience at
    /// `position`, once per visitor, experience and variation: the exposure is recorded among
    /// the visitor's data (so a restart remembers it) and, with a shared store, recorded once
    /// across instances; only the call that records it first sends the event.
    mutating func trackExposure(at position: Int) async -> ExposureResult {
        guard preview == nil else { return .notDecided }
        let experience = installed.experiences[position], ids = installed.storedIds[position]
        readStored()
        guard let stored = stored.variation(forExperience: ids.experience),
              let index = ids.variationIndex(of: stored) else { return .notDecided }
        let variation = experience.variations[index]
        let sent = ids.sentMarkers[index]
        if self.stored.containsGoal(sent) { return .alreadyTracked }
        let pending = ids.pendingMarkers[index]
        guard self.stored.containsGoal(pending) else { return .notManual }
        guard consented, trackingEnabled else {
            runtime.log.debug("trackExposure \(experience.key): \(consented ? "tracking is off" : "no consent"), not sent")
            return .trackingOff
        }
        // The sent marker replaces the pending one: one marker per experience.
        var (first, data) = runtime.ports.visitorStore.update(key) { data in
            (data.setExposureMarker(sent, experienceId: experience.id), data)
        }
        // Another process on the same storage, or another instance on the shared store, may have
        // sent it: the first to record it there sends (unreachable shared store: this instance
        // decides, as for conversions).
        let marker = sent.string
        if first, !runtime.ports.visitorStore.recordExposureOnce(key, marker: marker) { first = false }
        if first, let shared = runtime.sharedStore, await shared.recordGoalOnce(key, goalId: marker) == false {
            first = false
        }
        guard first else { return .alreadyTracked }
        let event = TrackingEvent(accountId: installed.accountId, projectId: installed.projectId, visitorId: visitorId,
                                  segments: data.storedSegments,
                                  payload: .bucketing(experienceId: experience.id, variationId: variation.id))
        guard runtime.ports.trackingSink.offer(event) else { return .dropped }
        runtime.announceTracked(event, to: trackingHooks)
        return .tracked
    }

    /// The exposures of the carriers that give the visitor the feature at `position`, in the
    /// order a resolution decides them: each carrier with a stored decision, up to the first
    /// whose variation switches the feature on. The results, one per carrier with a decision.
    mutating func trackFeatureExposure(at position: Int) async -> [ExposureResult] {
        let plan = installed.featurePlans[position]
        var results: [ExposureResult] = []
        for (carrier, index) in plan.carriers.enumerated() {
            readStored()
            let ids = installed.storedIds[index]
            guard let stored = stored.variation(forExperience: ids.experience),
                  let variationIndex = ids.variationIndex(of: stored) else { continue }
            results.append(await trackExposure(at: index))
            if plan.result(carrier: carrier, variationIndex: variationIndex, typeCasting: false) != nil { break }
        }
        return results
    }
}

extension [ExposureResult] {
    /// The feature's result from its carriers': dropped when an event was refused, else tracked
    /// when one was, else the first other.
    var combined: ExposureResult {
        if contains(.dropped) { return .dropped }
        if contains(.tracked) { return .tracked }
        if contains(.alreadyTracked) { return .alreadyTracked }
        return first ?? .notDecided
    }
}
