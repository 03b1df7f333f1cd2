import ConvertEnvironment
import ConvertStorage
import ConvertSynchronization
import ConvertVisitor
import Foundation

extension WriteBehindVisitorStore {
    // MARK: Write-behind

    /// Marks `key` for writing behind; `base` is what the backend holds of it (kept when the key
    /// is marked already, unless `replacingBase`: a full rewrite), `latest` its data as of the
    /// change numbered `version` (kept unless a later one is).
    /// A `base` taken before the backend last lost its data (`dataSet` older than the current
    /// one) is taken as empty.
    func markDirty(_ key: VisitorKey, base: VisitorData, renewed: Bool, replacingBase: Bool = false,
                   latest: VisitorData, version: UInt64, dataSet: UInt64? = nil) {
        let (start, dropped): (Bool, Int?) = state.withValue { state in
            var dropped: Int?
            let stale = dataSet.map { $0 != state.dataSet } ?? false
            let base = stale ? VisitorData() : base, renewed = stale ? false : renewed
            if state.dirty[key] == nil {
                var base = base, renewed = renewed
                if let stored = state.stored.removeValue(forKey: key) {
                    for (experience, variation) in stored.decisions {
                        base.setVariation(InternedId(variation), forExperience: InternedId(experience))
                    }
                    for goal in stored.goals { base.insertGoal(InternedId(goal)) }
                    renewed = true
                }
                state.nextMark += 1
                state.dirty[key] = Pending(mark: state.nextMark, base: base, renewed: renewed, latest: latest, version: version,
                                          dataSet: state.dataSet)
                state.order.append((key, state.nextMark))
                if state.dirty.count > options.maximumPendingVisitors, let oldest = popOldest(&state) {
                    state.dirty[oldest] = nil
                    state.counters.droppedWrites += 1
                    state.droppedInOutage += 1
                    dropped = state.counters.droppedWrites
                }
            } else {
                if replacingBase {
                    state.dirty[key]!.base = base
                    state.dirty[key]!.renewed = renewed
                    state.dirty[key]!.dataSet = state.dataSet
                } else if state.dirty[key]!.dataSet != state.dataSet {
                    state.dirty[key]!.base = VisitorData()
                    state.dirty[key]!.renewed = false
                    state.dirty[key]!.dataSet = state.dataSet
                }
                if version > state.dirty[key]!.version {
                    state.dirty[key]!.latest = latest
                    state.dirty[key]!.version = version
                }
            }
            guard !state.writerRunning else { return (false, dropped) }
            state.writerRunning = true
            return (true, dropped)
        }
        if let dropped {
            warn("dropped", "more than \(options.maximumPendingVisitors) visitor(s) with changes not yet written "
                + "(maximumPendingVisitors): the oldest visitors' changes are dropped, not written (\(dropped) so far)")
        }
        if start { Task.detached { await self.runWriter() } }
    }

    /// A write that failed: its visitors marked again with the base they had (what the backend
    /// is known to hold, unless it lost its data since), merged with changes marked since.
    func markAgain(_ batch: [(VisitorKey, Pending)]) {
        for (key, pending) in batch {
            markDirty(key, base: pending.base, renewed: false, replacingBase: true, latest: pending.latest, version: pending.version,
                      dataSet: pending.dataSet)
        }
    }

    /// The oldest key still marked, skipping stale entries of the order queue.
    func popOldest(_ state: inout State) -> VisitorKey? {
        while state.orderStart < state.order.count {
            let entry = state.order[state.orderStart]
            state.orderStart += 1
            if state.dirty[entry.key]?.mark == entry.mark { return entry.key }
        }
        return nil
    }

    /// Up to a batch of marked keys, oldest first, unmarked; `nil` when none.
    func takeBatch() -> [(VisitorKey, Pending)]? {
        state.withValue { takeBatch(&$0) }
    }

    func takeBatch(_ state: inout State) -> [(VisitorKey, Pending)]? {
        var batch: [(VisitorKey, Pending)] = []
        while batch.count < options.batchSize, let key = popOldest(&state) {
            if let pending = state.dirty.removeValue(forKey: key) { batch.append((key, pending)) }
        }
        if state.orderStart > 4096 && state.orderStart * 2 > state.order.count {
            state.order.removeFirst(state.orderStart)
            state.orderStart = 0
        }
        return batch.isEmpty ? nil : batch
    }

    func runWriter() async {
        while true {
            let failures = state.withValue { $0.failures }
            let delay = failures == 0 ? options.writeBehind : options.retryBackoff.delay(afterFailures: failures)
            try? await clock.sleep(for: delay)
            let batch: [(VisitorKey, Pending)]? = state.withValue { state in
                guard let batch = takeBatch(&state) else {
                    // Under the lock, so a change marked after this sees no writer and starts one.
                    state.writerRunning = false
                    return nil
                }
                return batch
            }
            guard let batch else { return }
            let began = clock.elapsed
            let written = await write(batch)
            state.withValue { state in
                // The backend said it was back while the batch was on its way (a cluster's
                // promoted replica announced after the batch was routed to the dead master): it
                // failed on what was, and goes again at the next turn rather than after a backoff.
                if written || state.recovered.map({ $0 >= began }) == true {
                    state.failures = 0
                } else {
                    state.failures += 1
                }
            }
        }
    }

    /// Writes everything pending now, batch after batch, once the backend is back (one drain at
    /// a time; the writer's backoff is not waited out).
    func drain() {
        let start = state.withValue { state -> Bool in
            if state.draining {
                state.drainAgain = true
                return false
            }
            guard !state.dirty.isEmpty else { return false }
            state.draining = true
            state.drainAgain = false
            return true
        }
        guard start else { return }
        Task.detached {
            while let batch = self.takeBatch() {
                if await self.write(batch) { continue }
                // Asked again while this batch was on its way (the backend came back): it failed
                // on what was, so it goes again now; otherwise the writer's backoff takes over.
                let again = self.state.withValue { state -> Bool in
                    defer { state.drainAgain = false }
                    return state.drainAgain
                }
                guard again else { break }
            }
            self.state.withValue { $0.draining = false }
        }
    }

    /// The changes of `data` over `pending.base`: new decisions and goals, locations and
    /// segments when they differ; the renewal unless the backend just renewed.
    static func changes(_ key: VisitorKey, _ data: VisitorData, over pending: Pending,
                                leavingOut awaiting: [InternedId] = []) -> VisitorDataChanges {
        let base = pending.base
        var decisions: [String: String] = [:]
        data.forEachDecision { experience, variation in
            if !base.hasVariation(forExperience: experience), !awaiting.contains(experience) {
                decisions[experience.string] = variation.string
            }
        }
        // Compared on the interned ids and the segments' box; strings only for what is written.
        var goals = Set<String>()
        data.forEachStoredGoal { goal in
            if !base.containsGoal(goal) { goals.insert(goal.string) }
        }
        return VisitorDataChanges(key: key, decisions: decisions, goals: goals,
                                  locations: data.hasSameLocations(as: base) ? nil : data.locations,
                                  segmentValues: data.hasSameSegments(as: base) ? nil : data.segmentValues,
                                  renewsExpiry: !pending.renewed)
    }

    /// Visitors whose write is on its way to the backend (taken from the pending ones).
    package var writesInFlight: Int { state.withValue { $0.inFlight.count } }

    /// Writes the keys' changes; on failure they are marked again for a retry.
    func write(_ batch: [(VisitorKey, Pending)]) async -> Bool {
        state.withValue { state in for (key, _) in batch { state.inFlight[key, default: 0] += 1 } }
        defer {
            let waiters = state.withValue { state in
                for (key, _) in batch {
                    let left = (state.inFlight[key] ?? 1) - 1
                    state.inFlight[key] = left > 0 ? left : nil
                }
                defer { state.writeWaiters = [] }
                return state.writeWaiters
            }
            for waiter in waiters { waiter.resume() }
        }
        // New decisions still awaiting their claim are left out (and looked at again next time).
        // Read with the visitors' data under the state's lock, as the decision path adds them.
        let now = clock.elapsed
        let claimsAfter = options.firstDecisionClaim == .afterAnswering
        // The backend's data set now: a base taken before it last lost its data describes nothing
        // it holds, so such a visitor is written whole.
        let dataSet = state.withValue { $0.dataSet }
        let read = { (awaiting: [VisitorKey: [InternedId: Duration]]) -> [(VisitorKey, Pending, [InternedId])] in
            // Numbered before the reads: a change a read misses is numbered higher.
            let version = self.versions.value
            return batch.map { key, pending in
                var pending = pending
                if pending.dataSet != dataSet {
                    pending.base = VisitorData()
                    pending.renewed = false
                    pending.dataSet = dataSet
                }
                // A visitor the local store evicted is written from what its pending write kept.
                if let data = self.local.data(for: key), version > pending.version {
                    pending.latest = data
                    pending.version = version
                }
                var waiting: [InternedId] = []
                if let decisions = awaiting[key] {
                    for (experience, since) in decisions where now - since < Self.claimWait { waiting.append(experience) }
                }
                return (key, pending, waiting)
            }
        }
        let snapshot = claimsAfter ? state.withValue { read($0.awaitingClaims) } : read([:])
        var leftOut: [(VisitorKey, VisitorData, Pending)] = []
        let changes = snapshot.compactMap { key, pending, waiting -> VisitorDataChanges? in
            if !waiting.isEmpty {
                var written = pending.latest
                for experience in waiting { written.removeVariation(forExperience: experience) }
                leftOut.append((key, written, pending))
            }
            let changes = Self.changes(key, pending.latest, over: pending, leavingOut: waiting)
            return changes.isEmpty && !changes.renewsExpiry ? nil : changes
        }
        defer {
            for (key, written, pending) in leftOut {
                markDirty(key, base: written, renewed: true, latest: pending.latest, version: pending.version,
                          dataSet: pending.dataSet)
            }
        }
        guard !changes.isEmpty else { return true }
        let started = clock.elapsed
        do {
            let kept = try await backend.merge(changes)
            var conflicts = 0
            for (change, stored) in zip(changes, kept) where !stored.isEmpty {
                let (_, adoption) = changeLocal(change.key) { data in
                    // A visitor evicted meanwhile gets the stored decisions at its next load.
                    guard !data.isEmpty else { return }
                    let adopted = Self.adopting(stored, data)
                    conflicts += adopted.changed
                    data = adopted.data
                }
                keepLatest(change.key, adoption)
            }
            state.withValue { state in
                state.counters.saves += changes.count
                state.counters.conflicts += conflicts
                for change in changes { remember(change.key, &state) }
            }
            noteSuccess(startedAt: started)
            // Lost while on its way: what it sent over its base may be all the new data set has.
            if state.withValue({ $0.dataSet }) != dataSet { markAgain(snapshot.map { ($0.0, $0.1) }) }
            if conflicts > 0 {
                log.info("shared visitor store: \(conflicts) sticky decision(s) were already stored by another instance; the first kept")
            }
            return true
        } catch {
            state.withValue { $0.counters.saveFailures += 1 }
            noteFailure(error, startedAt: started)
            warn("save", "visitor data not written (\(error)); \(changes.count) visitor(s) will be retried")
            markAgain(snapshot.map { ($0.0, $0.1) })
            return false
        }
    }

    /// A warning at most once per 10 s per kind, on the store's clock.
    func warn(_ kind: String, _ message: String) {
        let now = clock.elapsed
        let due = state.withValue { state -> Bool in
            state.warnings[kind, default: RateLimitedCount()].note(now: now) != nil
        }
        if due { log.warn("shared visitor store: \(message)") }
    }

    // MARK: Merging

    /// Loaded data merged with what this instance holds: stored decisions first, goals and
    /// locations united. Segments: this instance's over the stored ones while it has changes
    /// not yet written; otherwise its copy is older than (or the same as) the stored one, which
    /// is taken.
    static func merged(stored: VisitorData, local: VisitorData, localUnsaved: Bool) -> VisitorData {
        // On the interned ids in place: every returning visitor's load comes through here.
        var out = stored
        local.forEachDecision { experience, variation in
            if !out.hasVariation(forExperience: experience) { out.setVariation(variation, forExperience: experience) }
        }
        local.forEachStoredGoal { out.insertGoal($0) }
        local.forEachLocation { out.insertLocation($0) }
        if localUnsaved {
            out.segmentValues = VisitorSegments.storing(local.segmentValues, over: stored.segmentValues)
        } else if stored.storedSegmentValues?.isEmpty ?? true {
            out.adoptSegments(of: local)
        }
        return out
    }

    /// `local` with the decisions another instance stored first adopted (experience id →
    /// variation id); with the number of decisions that changed.
    static func adopting(_ stored: [String: String], _ local: VisitorData) -> (data: VisitorData, changed: Int) {
        var out = local
        var bucketing = local.bucketing
        var changed = 0
        for (experience, variation) in stored where bucketing[experience] != variation {
            if bucketing[experience] != nil { changed += 1 }
            bucketing[experience] = variation
        }
        out.bucketing = bucketing
        return (out, changed)
    }
}
