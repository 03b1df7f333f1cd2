import ConvertEnvironment
import ConvertStorage
import ConvertTracking

extension TrackingQueue {
    /// Drops the events of `visitorId` waiting in the buffer or for a retry, acknowledging
    /// their journal entries so a restart does not send them; the batch on the wire is not
    /// recalled. Returns how many were dropped (counted in ``TrackingCounters/dropped``).
    public func discardPending(visitorId: String) async -> Int {
        var removed = buffer.removeWaiting(visitorId: visitorId)
        var retried = 0
        units = units.compactMap { unit in
            let kept = unit.filter { $0.event.visitorId != visitorId }
            retried += unit.count - kept.count
            removed += unit.filter { $0.event.visitorId == visitorId }
            return kept.isEmpty ? nil : kept
        }
        if retried > 0 { buffer.settle(dropped: retried) }
        guard !removed.isEmpty else { return 0 }
        do {
            try journal?.acknowledge(removed.compactMap(\.sequence))
        } catch {
            log.error("tracking journal acknowledgement failed (discarded events may be sent after a restart): \(error)")
        }
        settleWaiters()
        return removed.count
    }
}
