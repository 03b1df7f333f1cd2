import ConvertEvents
import ConvertSupport
import Foundation

/// The queue's pending events and counters, behind one lock so `enqueue` never waits for the actor.
final class PendingBuffer: @unchecked Sendable {
    enum AppendResult { case queued, first, wakeNow, dropped }

    // Every field is guarded by `lock`.
    private let lock = NSLock()
    private var entries: [TrackingQueue.Entry] = []
    private var head = 0
    /// Entries taken out for delivery and not settled yet.
    private var inFlight = 0
    /// When the oldest waiting entry came, on `clock`.
    private var firstAt: Duration?
    private var stats = TrackingCounters()
    private var open = true
    /// The ordinal the next entry gets; ordinals order every entry the queue ever held.
    private var nextOrdinal: UInt64 = 0
    private var drops = RateLimitedCount(interval: .seconds(10))
    let capacity: Int
    private let clock: any SleepClock

    init(capacity: Int, clock: any SleepClock) {
        self.capacity = capacity
        self.clock = clock
    }

    var count: Int { lock.withLock { entries.count - head } }

    /// Whether an event would be taken now (open and below capacity).
    var hasRoom: Bool { lock.withLock { open && entries.count - head + inFlight < capacity } }

    var firstPendingAt: Duration? { lock.withLock { entries.count > head ? firstAt : nil } }

    /// The ordinal of the oldest event waiting in the buffer (not in flight).
    var oldestWaitingOrdinal: UInt64? { lock.withLock { entries.count > head ? entries[head].ordinal : nil } }

    /// The ordinal of the newest event ever taken, `nil` before the first.
    var newestOrdinal: UInt64? { lock.withLock { nextOrdinal == 0 ? nil : nextOrdinal - 1 } }

    var counters: TrackingCounters {
        lock.withLock {
            var c = stats
            c.pending = entries.count - head + inFlight
            return c
        }
    }

    /// Refuses every later event.
    func close() { lock.withLock { open = false } }

    var isOpen: Bool { lock.withLock { open } }

    func recover(_ recovered: [(sequence: UInt64, event: TrackingEvent)]) {
        lock.withLock {
            let entriesRecovered = recovered.map { record -> TrackingQueue.Entry in
                defer { nextOrdinal += 1 }
                return TrackingQueue.Entry(sequence: record.sequence, ordinal: nextOrdinal, event: record.event)
            }
            entries.insert(contentsOf: entriesRecovered, at: head)
            stats.enqueued += recovered.count
            if firstAt == nil && !recovered.isEmpty { firstAt = clock.elapsed }
        }
    }

    /// Counts a refused event; returns how many to report now (`nil`: stay quiet, rate-limited).
    func countDrop() -> Int? {
        lock.withLock {
            stats.enqueued += 1
            stats.dropped += 1
            return drops.note(now: clock.elapsed)
        }
    }

    func append(sequence: UInt64?, event: TrackingEvent, batchSize: Int) -> AppendResult {
        lock.withLock {
            let pending = entries.count - head
            guard open, pending + inFlight < capacity else { return .dropped }
            entries.append(TrackingQueue.Entry(sequence: sequence, ordinal: nextOrdinal, event: event))
            nextOrdinal += 1
            stats.enqueued += 1
            if pending == 0 {
                firstAt = clock.elapsed
                return batchSize <= 1 ? .wakeNow : .first
            }
            return pending + 1 == batchSize ? .wakeNow : .queued
        }
    }

    /// Takes up to `maximum` events of one project from the front; they count as in flight until settled.
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

    func countFailure(retrying count: Int) {
        lock.withLock {
            stats.retried += count
            stats.failedRequests += 1
        }
    }

    /// Settles in-flight events: acknowledged, refused by the server, or impossible to send.
    func settle(sent: Int = 0, rejected: Int = 0, dropped: Int = 0) {
        lock.withLock {
            inFlight -= sent + rejected + dropped
            stats.sent += sent
            stats.rejected += rejected
            stats.dropped += dropped
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

/// Counts occurrences and says when to report them: the first at once, then at most one
/// report (with the count since the last) per interval.
struct RateLimitedCount {
    let interval: Duration
    private var unreported = 0
    private var lastReport: Duration?

    init(interval: Duration) { self.interval = interval }

    /// Notes one occurrence at `now` (an instant of the owner's clock); returns the count to
    /// report now, or `nil`.
    mutating func note(now: Duration) -> Int? {
        unreported += 1
        if let lastReport, now - lastReport < interval { return nil }
        lastReport = now
        defer { unreported = 0 }
        return unreported
    }
}
