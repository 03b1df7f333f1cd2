import ConvertEvents
import Foundation

/// The queue's pending events and counters, behind one lock so `enqueue` never waits for the actor.
final class PendingBuffer: @unchecked Sendable {
    enum AppendResult { case queued, first, wakeNow, dropped }

    // Every field is guarded by `lock`.
    private let lock = NSLock()
    private var entries: [TrackingQueue.Entry] = []
    private var head = 0
    private var inFlight = 0
    private var firstAt: ContinuousClock.Instant?
    private var stats = TrackingCounters()
    let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    var count: Int { lock.withLock { entries.count - head } }

    var hasRoom: Bool { lock.withLock { entries.count - head + inFlight < capacity } }

    var firstPendingAt: ContinuousClock.Instant? { lock.withLock { entries.count > head ? firstAt : nil } }

    var counters: TrackingCounters {
        lock.withLock {
            var c = stats
            c.pending = entries.count - head + inFlight
            return c
        }
    }

    func recover(_ recovered: [TrackingQueue.Entry]) {
        lock.withLock {
            entries.insert(contentsOf: recovered, at: head)
            stats.enqueued += recovered.count
            if firstAt == nil && !recovered.isEmpty { firstAt = .now }
        }
    }

    func countDrop() {
        lock.withLock {
            stats.enqueued += 1
            stats.dropped += 1
        }
    }

    func append(_ entry: TrackingQueue.Entry, batchSize: Int) -> AppendResult {
        lock.withLock {
            let pending = entries.count - head
            guard pending + inFlight < capacity else {
                stats.enqueued += 1
                stats.dropped += 1
                return .dropped
            }
            entries.append(entry)
            stats.enqueued += 1
            if pending == 0 {
                firstAt = .now
                return batchSize <= 1 ? .wakeNow : .first
            }
            return pending + 1 == batchSize ? .wakeNow : .queued
        }
    }

    /// Takes up to `maximum` events of one project from the front.
    func takeBatch(maximum: Int) -> [TrackingQueue.Entry] {
        lock.withLock {
            guard head < entries.count else { return [] }
            let project = (entries[head].event.accountId, entries[head].event.projectId)
            var end = head
            while end < entries.count, end - head < maximum,
                  (entries[end].event.accountId, entries[end].event.projectId) == project {
                end += 1
            }
            let batch = Array(entries[head..<end])
            head = end
            inFlight += batch.count
            compactIfNeeded()
            return batch
        }
    }

    func restoreFront(_ batch: [TrackingQueue.Entry]) {
        lock.withLock {
            inFlight -= batch.count
            entries.insert(contentsOf: batch, at: head)
            firstAt = .now
        }
    }

    func countFailure(retrying count: Int) {
        lock.withLock {
            stats.retried += count
            stats.failedRequests += 1
        }
    }

    func completeSent(_ count: Int) {
        lock.withLock {
            inFlight -= count
            stats.sent += count
        }
    }

    func completeDropped(_ count: Int) {
        lock.withLock {
            inFlight -= count
            stats.dropped += count
        }
    }

    /// Called under `lock`: drops consumed slots once they dominate the array.
    private func compactIfNeeded() {
        if head > 1024 && head * 2 > entries.count {
            entries.removeFirst(head)
            head = 0
        }
    }
}
