import ConvertEnvironment
import ConvertSynchronization
import ConvertTracking
import Foundation

/// The queue's pending events and counters, behind one lock so `enqueue` never waits for the actor.
final class PendingBuffer: Sendable {
    enum AppendResult { case queued, first, wakeNow, dropped }

    private struct State {
        var entries: [TrackingQueue.Entry] = []
        var head = 0
        /// Entries taken out for delivery and not settled yet.
        var inFlight = 0
        /// When the oldest waiting entry came, on `clock`.
        var firstAt: Duration?
        var stats = TrackingCounters()
        var open = true
        /// The ordinal the next entry gets; ordinals order every entry the queue ever held.
        var nextOrdinal: UInt64 = 0
        var drops = RateLimitedCount()

        /// The entries at `range`, moved out rather than copied: a copy would retain each of an
        /// event's strings now and release them at the next compaction. What stays in their slots
        /// holds nothing counted, and is dropped with the other consumed slots.
        mutating func takeEntries(_ range: Range<Int>) -> [TrackingQueue.Entry] {
            precondition(range.lowerBound >= 0 && range.upperBound <= entries.count, "no entries at \(range)")
            guard !range.isEmpty else { return [] }
            return [TrackingQueue.Entry](unsafeUninitializedCapacity: range.count) { taken, initialized in
                entries.withUnsafeMutableBufferPointer { slots in
                    let first = slots.baseAddress! + range.lowerBound
                    taken.baseAddress!.moveInitialize(from: first, count: range.count)
                    first.initialize(repeating: .consumed, count: range.count)
                }
                initialized = range.count
            }
        }

        /// Drops consumed slots once they dominate the array.
        mutating func compactIfNeeded() {
            if head > 1024 && head * 2 > entries.count {
                entries.removeFirst(head)
                head = 0
            }
        }
    }

    private let state = Locked(State())
    let capacity: Int
    private let clock: any SleepClock

    init(capacity: Int, clock: any SleepClock) {
        self.capacity = capacity
        self.clock = clock
    }

    var count: Int { state.withValue { $0.entries.count - $0.head } }

    /// Whether an event would be taken now (open and below capacity).
    var hasRoom: Bool { state.withValue { $0.open && $0.entries.count - $0.head + $0.inFlight < capacity } }

    var firstPendingAt: Duration? { state.withValue { $0.entries.count > $0.head ? $0.firstAt : nil } }

    /// The ordinal of the oldest event waiting in the buffer (not in flight).
    var oldestWaitingOrdinal: UInt64? { state.withValue { $0.entries.count > $0.head ? $0.entries[$0.head].ordinal : nil } }

    /// The ordinal of the newest event ever taken, `nil` before the first.
    var newestOrdinal: UInt64? { state.withValue { $0.nextOrdinal == 0 ? nil : $0.nextOrdinal - 1 } }

    var counters: TrackingCounters {
        state.withValue { state in
            var c = state.stats
            c.pending = state.entries.count - state.head + state.inFlight
            return c
        }
    }

    /// Waiting events the journal holds.
    var waitingJournaled: Int {
        state.withValue { state in state.entries[state.head...].filter { $0.sequence != nil }.count }
    }

    /// Refuses every later event.
    func close() { state.withValue { $0.open = false } }

    var isOpen: Bool { state.withValue { $0.open } }

    func recover(_ recovered: [(sequence: UInt64, event: TrackingEvent)]) {
        state.withValue { state in
            let entriesRecovered = recovered.map { record -> TrackingQueue.Entry in
                defer { state.nextOrdinal += 1 }
                return TrackingQueue.Entry(sequence: record.sequence, ordinal: state.nextOrdinal, event: record.event)
            }
            state.entries.insert(contentsOf: entriesRecovered, at: state.head)
            state.stats.enqueued += recovered.count
            if state.firstAt == nil && !recovered.isEmpty { state.firstAt = clock.elapsed }
        }
    }

    /// Counts a refused event; returns how many to report now (`nil`: stay quiet, rate-limited).
    func countDrop() -> Int? {
        state.withValue { state in
            state.stats.enqueued += 1
            state.stats.dropped += 1
            return state.drops.note(now: clock.elapsed)
        }
    }

    /// Appends `event`: `.wakeNow` when the pending events reach `batchSize` (a delivery is due)
    /// or `fullBatch` (a delivery paced by the request interval need not wait any longer).
    func append(sequence: UInt64?, event: TrackingEvent, batchSize: Int, fullBatch: Int) -> AppendResult {
        state.withValue { state in
            let pending = state.entries.count - state.head
            guard state.open, pending + state.inFlight < capacity else { return .dropped }
            state.entries.append(TrackingQueue.Entry(sequence: sequence, ordinal: state.nextOrdinal, event: event))
            state.nextOrdinal += 1
            state.stats.enqueued += 1
            if pending == 0 {
                state.firstAt = clock.elapsed
                return batchSize <= 1 ? .wakeNow : .first
            }
            return pending + 1 == batchSize || pending + 1 == fullBatch ? .wakeNow : .queued
        }
    }

    /// Takes up to `maximum` events of one project from the front; they count as in flight until settled.
    func takeBatch(maximum: Int) -> [TrackingQueue.Entry] {
        state.withValue { state in
            let head = state.head
            guard head < state.entries.count else { return [] }
            let project = (state.entries[head].event.accountId, state.entries[head].event.projectId)
            var end = head
            while end < state.entries.count, end - head < maximum,
                  (state.entries[end].event.accountId, state.entries[end].event.projectId) == project {
                end += 1
            }
            let batch = state.takeEntries(head..<end)
            state.head = end
            state.inFlight += batch.count
            state.compactIfNeeded()
            return batch
        }
    }

    /// Counts one delivery request and the time it took.
    func countRequest(took duration: Duration) {
        state.withValue { state in
            state.stats.requests += 1
            state.stats.requestTime += duration
        }
    }

    func countFailure(retrying count: Int) {
        state.withValue { state in
            state.stats.retried += count
            state.stats.failedRequests += 1
        }
    }

    /// Removes the waiting events of `visitorId` (not those in flight), counted as dropped.
    func removeWaiting(visitorId: String) -> [TrackingQueue.Entry] {
        state.withValue { state in
            let waiting = state.entries[state.head...]
            guard waiting.contains(where: { $0.event.visitorId == visitorId }) else { return [] }
            let removed = waiting.filter { $0.event.visitorId == visitorId }
            state.entries = waiting.filter { $0.event.visitorId != visitorId }
            state.head = 0
            state.stats.dropped += removed.count
            if state.entries.isEmpty { state.firstAt = nil }
            return removed
        }
    }

    /// Removes the waiting events with these journal sequences (counted as dropped); returns
    /// how many.
    func removeWaiting(sequences: Set<UInt64>) -> Int {
        state.withValue { state in
            let waiting = state.entries[state.head...]
            let kept = waiting.filter { $0.sequence.map { !sequences.contains($0) } ?? true }
            let removed = waiting.count - kept.count
            guard removed > 0 else { return 0 }
            state.entries = Array(kept)
            state.head = 0
            state.stats.dropped += removed
            if state.entries.isEmpty { state.firstAt = nil }
            return removed
        }
    }

    /// Settles in-flight events: acknowledged, refused by the server, or impossible to send.
    func settle(sent: Int = 0, rejected: Int = 0, dropped: Int = 0) {
        state.withValue { state in
            state.inFlight -= sent + rejected + dropped
            state.stats.sent += sent
            state.stats.rejected += rejected
            state.stats.dropped += dropped
        }
    }
}
