import ConvertEnvironment
import ConvertStorage
import ConvertTracking

extension TrackingQueue {
    /// Drops the events of `visitorId` waiting in the buffer or for a retry, and erases the
    /// visitor's records from the journal (and, through it, from every process sharing its
    /// storage) so no restart sends them; the batch on the wire is not recalled. Returns how
    /// many were dropped (counted in ``TrackingCounters/dropped``).
    public func discardPending(visitorId: String, accountId: String, projectId: String) async -> Int {
        var removed = buffer.removeWaiting(visitorId: visitorId)
        var retried = 0
        units = units.compactMap { unit in
            let kept = unit.filter { $0.event.visitorId != visitorId }
            retried += unit.count - kept.count
            removed += unit.filter { $0.event.visitorId == visitorId }
            return kept.isEmpty ? nil : kept
        }
        if retried > 0 { buffer.settle(dropped: retried) }
        do {
            try journal?.acknowledge(removed.compactMap(\.sequence))
            _ = try journal?.forget(VisitorKey(accountId: accountId, projectId: projectId, visitorId: visitorId))
        } catch {
            log.error("tracking journal: a forgotten visitor's events not erased (they may be sent after a restart): \(error)")
        }
        guard !removed.isEmpty else { return 0 }
        settleWaiters()
        return removed.count
    }
}
