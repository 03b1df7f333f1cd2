import ConvertEnvironment
import ConvertStorage
import ConvertSynchronization
import ConvertVisitor

extension WriteBehindVisitorStore {
    // MARK: Claims and goal records

    /// How long the writes behind leave out a new decision awaiting its claim. A claim ends
    /// within the client's command timeout and removes the entry itself; this only bounds an
    /// entry whose claim never ran, so it is long: a short one let a write behind store a
    /// decision first when the claim's task was slow to start, and then no instance sent it.
    static let claimWait: Duration = .seconds(30)

    public func recordGoalOnce(_ key: VisitorKey, goalId: String) async -> Bool? {
        if skippedDuringOutage() != nil {
            state.withValue { $0.counters.goalRecordFailures += 1 }
            return nil
        }
        let started = clock.elapsed
        do {
            let first = try await backend.recordGoalOnce(key, goalId: goalId)
            state.withValue { state in
                state.counters.goalRecords += 1
                note(key, &state) { $0.goals.append(goalId) } apply: { $0.insertGoal(InternedId(goalId)) }
            }
            noteSuccess(startedAt: started)
            return first
        } catch {
            state.withValue { $0.counters.goalRecordFailures += 1 }
            noteFailure(error, startedAt: started)
            return nil
        }
    }

    /// Claims the visitor's first decision for the experience in the backend, blocking for at
    /// most the backend's deadline: the variation that holds and whether this claim stored it
    /// (only then does this instance send the bucketing event). `nil` when the backend could
    /// not answer, and at once during an outage's fail-fast window: the local decision stands.
    public func claimFirstDecision(_ key: VisitorKey, experienceId: String, variationId: String) -> VariationClaim? {
        guard options.firstDecisionClaim != .never else { return VariationClaim(variationId: variationId, isFirst: true) }
        if skippedDuringOutage() != nil {
            state.withValue { $0.counters.claimFailures += 1 }
            return nil
        }
        let started = clock.elapsed
        do {
            let claim = try backend.claimVariation(key, experienceId: experienceId, variationId: variationId)
            claimed(key, experienceId: experienceId, claim, startedAt: started)
            return claim
        } catch {
            state.withValue { $0.counters.claimFailures += 1 }
            noteFailure(error, startedAt: started)
            return nil
        }
    }

    /// ``claimFirstDecision(_:experienceId:variationId:)`` without blocking a thread. A claim
    /// that could not be made leaves the decision to the writes behind.
    public func claimFirstDecisionLater(_ key: VisitorKey, experienceId: String, variationId: String) async -> VariationClaim? {
        guard options.firstDecisionClaim != .never else { return VariationClaim(variationId: variationId, isFirst: true) }
        let experience = InternedId(experienceId)
        if skippedDuringOutage() != nil {
            state.withValue { $0.counters.claimFailures += 1 }
            unclaimed(key, experience)
            return nil
        }
        let started = clock.elapsed
        do {
            let claim = try await backend.claimVariationLater(key, experienceId: experienceId, variationId: variationId)
            claimed(key, experienceId: experienceId, claim, startedAt: started)
            state.withValue { _ = Self.stopAwaiting(key, experience, &$0) }
            return claim
        } catch {
            state.withValue { $0.counters.claimFailures += 1 }
            noteFailure(error, startedAt: started)
            unclaimed(key, experience)
            return nil
        }
    }

    /// A decision whose claim failed: written behind like any change (first writer wins).
    func unclaimed(_ key: VisitorKey, _ experience: InternedId) {
        guard state.withValue({ Self.stopAwaiting(key, experience, &$0) }), let current = currentData(key) else { return }
        var base = current.data
        base.removeVariation(forExperience: experience)
        markDirty(key, base: base, renewed: false, latest: current.data, version: current.version)
    }

    /// Removes a decision from those awaiting their claim; `false` when it was not there.
    static func stopAwaiting(_ key: VisitorKey, _ experience: InternedId, _ state: inout State) -> Bool {
        guard state.awaitingClaims[key]?.removeValue(forKey: experience) != nil else { return false }
        if state.awaitingClaims[key]?.isEmpty == true { state.awaitingClaims[key] = nil }
        return true
    }

    func claimed(_ key: VisitorKey, experienceId: String, _ claim: VariationClaim, startedAt started: Duration) {
        let holder = claim.variationId
        state.withValue { state in
            state.counters.claims += 1
            if !claim.isFirst { state.counters.claimsLost += 1 }
            remember(key, &state)
            note(key, &state) { $0.decisions.append((experienceId, holder)) } apply: {
                $0.setVariation(InternedId(holder), forExperience: InternedId(experienceId))
            }
        }
        noteSuccess(startedAt: started)
    }

    /// Notes what a claim or goal record stored (and that it renewed the time to live): into the
    /// visitor's pending base when it has changes waiting, else kept for its next change (the
    /// decision path stores locally right after it claims). Notes of visitors that change no more
    /// are dropped past 4,096 (a write then sends what it would have skipped).
    func note(_ key: VisitorKey, _ state: inout State, _ record: (inout Stored) -> Void,
                      apply: (inout VisitorData) -> Void) {
        if state.dirty[key] != nil {
            apply(&state.dirty[key]!.base)
            state.dirty[key]!.renewed = true
            return
        }
        if state.stored.count >= 4_096, state.stored[key] == nil { state.stored = [:] }
        record(&state.stored[key, default: Stored()])
    }

    /// Drops the decisions that have awaited their claim longer than ``claimWait`` (the writes
    /// behind no longer leave them out anyway).
    static func forgetExpiredClaims(_ now: Duration, _ state: inout State) {
        state.awaitingClaims = state.awaitingClaims.compactMapValues { decisions in
            let waiting = decisions.filter { now - $0.value < claimWait }
            return waiting.isEmpty ? nil : waiting
        }
    }
}
