import ConvertEnvironment
import ConvertStorage
import ConvertSynchronization
import ConvertVisitor
import Foundation

extension WriteBehindVisitorStore {
    // MARK: Outages

    /// The reason to answer without calling the backend, while an outage's fail-fast window lasts.
    func skippedDuringOutage() -> String? {
        let now = clock.elapsed
        return state.withValue { state -> String? in
            guard let outage = state.outage, now < outage.retryAt else { return nil }
            return "\(backendName) unreachable since \(Self.seconds(now - outage.since)) s (\(outage.reason)); "
                + "next call in \(Self.milliseconds(outage.retryAt - now)) ms"
        }
    }

    /// A failed call: starts an outage (logged once), or lengthens its fail-fast window. An
    /// error about one visitor's record, or from one part of the backend while the others
    /// answer (counted, in `partFailures`), is reported (at most once per 10 s), not taken for
    /// an outage; nor is the failure of a call that began before the backend last came back.
    func noteFailure(_ error: any Error, startedAt started: Duration) {
        guard !(error is any VisitorRecordError) else {
            warn("record", "\(error); that visitor is decided from what this instance holds")
            return
        }
        guard !(error is any VisitorBackendPartError) else {
            state.withValue { $0.counters.partFailures += 1 }
            warn("part", "\(error); its visitors are decided from what this instance holds, the others' calls go on")
            return
        }
        beginOutage(reason: "\(error)", startedAt: started)
    }

    func beginOutage(reason: String, startedAt started: Duration? = nil) {
        let now = clock.elapsed
        let logged = state.withValue { state -> Bool in
            if let started, let recovered = state.recovered, started < recovered { return false }
            if var outage = state.outage {
                outage.failures += 1
                outage.retryAt = now + options.retryBackoff.delay(afterFailures: outage.failures)
                outage.reason = reason
                state.outage = outage
                return false
            }
            state.counters.outages += 1
            state.droppedInOutage = 0
            let due = state.warnings["outage", default: RateLimitedCount()].note(now: now) != nil
            state.outage = Outage(since: now, failures: 1, retryAt: now + options.retryBackoff.delay(afterFailures: 1),
                                  reason: reason, logged: due)
            return due
        }
        if logged {
            log.warn("shared visitor store: \(backendName) unreachable (\(reason)); deciding from this instance's "
                + "visitor data, writes kept pending until it answers again")
        }
    }

    /// A call that succeeded: ends an outage (logged, when its start was or when changes made
    /// during it were dropped) and writes what is pending — unless the call began before the
    /// outage did (its answer is older news). Whether it ended one.
    @discardableResult
    func noteSuccess(startedAt started: Duration? = nil, downFor reported: Duration? = nil) -> Bool {
        let now = clock.elapsed
        guard let ended = state.withValue({ state -> (outage: Outage, pending: Int, dropped: Int)? in
            guard let outage = state.outage else { return nil }
            if let started, started < outage.since { return nil }
            state.outage = nil
            state.recovered = now
            state.failures = 0
            defer { state.droppedInOutage = 0 }
            return (outage, state.dirty.count, state.droppedInOutage)
        }) else { return false }
        if ended.outage.logged || ended.dropped > 0 {
            var line = "shared visitor store: \(backendName) reachable again after \(Self.seconds(reported ?? (now - ended.outage.since))) s"
            if ended.pending > 0 { line += "; writing the \(ended.pending) visitor(s) pending" }
            if ended.dropped > 0 {
                line += "; \(ended.dropped) visitor(s) changed during the outage not written: more than maximumPendingVisitors "
                    + "(\(options.maximumPendingVisitors)) were pending, and the oldest changes were dropped (counters.droppedWrites)"
            }
            log.warn(line)
        }
        drain()
        return true
    }

    func handle(_ event: VisitorDataBackendEvent) {
        switch event {
        case .unavailable(let reason):
            beginOutage(reason: reason)
        case .available(let downFor):
            // Also without an outage (a part of the backend was down, or a call that reached a
            // healthy part ended it first): the writer's backoff ends, what waits is written now,
            // and a call begun before this that fails after it starts no outage.
            let now = clock.elapsed
            state.withValue { state in
                state.failures = 0
                state.recovered = now
            }
            if !noteSuccess(downFor: downFor) { drain() }
        case .dataLost:
            // At once, before the writes the backend's return starts: from here every base is void.
            state.withValue { state in
                state.dataSet += 1
                state.stored = [:]
            }
            Task.detached { self.rewriteRecent() }
        }
    }

    /// Marks the visitors seen last for writing again: the backend lost what it held of them.
    /// (Visitors with changes pending are written whole anyway: their bases are void.)
    func rewriteRecent() {
        let keys = state.withValue { state -> [VisitorKey] in
            var seen = Set<VisitorKey>()
            return state.recent.filter { seen.insert($0).inserted }
        }
        var marked = 0
        for key in keys {
            guard let current = currentData(key) else { continue }
            markDirty(key, base: VisitorData(), renewed: false, replacingBase: true, latest: current.data, version: current.version)
            marked += 1
        }
        state.withValue { $0.counters.rewrittenAfterDataLoss += marked }
        log.warn("shared visitor store: \(backendName) lost the data it held (restarted without persistence?); "
            + "writing again the \(marked) visitor(s) this instance saw last")
    }

    func remember(_ key: VisitorKey, _ state: inout State) {
        let capacity = options.rewrittenAfterDataLoss
        guard capacity > 0 else { return }
        if state.recent.count < capacity {
            state.recent.append(key)
        } else {
            state.recent[state.recentNext] = key
            state.recentNext = (state.recentNext + 1) % capacity
        }
    }

    /// Seconds with one decimal, for log lines.
    static func seconds(_ duration: Duration) -> String {
        let tenths = max(0, milliseconds(duration) / 100)
        return "\(tenths / 10).\(tenths % 10)"
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
