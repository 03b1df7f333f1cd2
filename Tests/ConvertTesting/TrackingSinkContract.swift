import ConvertTracking
import Dispatch
import Foundation

/// Behaviour every ``TrackingSink`` must show when its receiver takes everything: what the
/// port's documentation promises of `enqueue`, `offer`, `flush`, `shutdown` and the counters.
/// Run it from your own tests:
///
/// ```swift
/// try await TrackingSinkContract.verify {
///     let delivery = RecordingTrackingDelivery()
///     return .init(sink: TrackingQueue(delivery: delivery), delivered: { delivery.delivered })
/// }
/// ```
public enum TrackingSinkContract {
    /// A sink under test, and a view of what its receiver has taken.
    public struct Subject: Sendable {
        /// The sink.
        public let sink: any TrackingSink
        /// Every event the receiver has taken so far, in the order taken, repeats included.
        public let delivered: @Sendable () -> [TrackingEvent]

        /// A subject of `sink`, whose receiver's events `delivered` reads.
        public init(sink: any TrackingSink, delivered: @escaping @Sendable () -> [TrackingEvent]) {
            self.sink = sink
            self.delivered = delivered
        }
    }

    /// Checks fresh subjects from `make` (each over a receiver that takes every batch, with
    /// room for 400 events and nothing left from an earlier run); `timeout` bounds each flush
    /// and shutdown. Throws ``ContractViolation`` naming the first broken promise:
    ///
    /// - counters, when kept, satisfy `enqueued == sent + dropped + rejected + pending` at every look;
    /// - a flush with nothing taken settles at once;
    /// - every event taken (`offer` said `true`, or `enqueue`, from one thread or many at once)
    ///   reaches the receiver once after `flush(timeout:)` answers `true`, or after `flush()`,
    ///   in each visitor's order, and the counters say so;
    /// - `shutdown(timeout:)` delivers what is pending, reports it drained with the sink's
    ///   counters, and afterwards `offer` answers `false`, `enqueue` takes nothing, and neither
    ///   event ever reaches the receiver (counted as dropped when the sink counts);
    /// - `stop()` leaves the counters consistent.
    public static func verify(timeout: Duration = .patience, _ make: () throws -> Subject) async throws {
        try await verifyTakingAndFlushing(try make(), timeout: timeout)
        try await verifyShutdown(try make(), timeout: timeout)
        try await verifyStop(try make(), timeout: timeout)
    }

    private static func verifyTakingAndFlushing(_ subject: Subject, timeout: Duration) async throws {
        let sink = subject.sink
        try checkCounters(sink, "a fresh sink")
        try require(await sink.flush(timeout: timeout), "a flush with nothing taken must settle")

        // One thread, three visitors interleaved.
        let first = (0..<24).map { event("v\($0 % 3)", "a\($0)") }
        for event in first { try require(sink.offer(event), "a sink with room must take \(event.visitorId)'s \(goal(event))") }
        try checkCounters(sink, "after offers")
        try require(await sink.flush(timeout: timeout), "flush(timeout:) must settle every event taken before it")
        try checkDelivered(subject, expected: first, "after flush(timeout:)")
        try checkCounters(sink, "after flush(timeout:)", settled: first.count)

        // Eight threads at once, each its own visitor.
        let threads = 8, perThread = 40
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for n in 0..<perThread { sink.enqueue(event("t\(thread)", "t\(thread)-\(n)")) }
        }
        let concurrent = (0..<threads).flatMap { thread in (0..<perThread).map { event("t\(thread)", "t\(thread)-\($0)") } }
        try checkCounters(sink, "after concurrent enqueues")
        try require(await sink.flush(timeout: timeout), "flush(timeout:) must settle events enqueued from many threads")
        try checkDelivered(subject, expected: first + concurrent, "after concurrent enqueues")
        try checkCounters(sink, "after concurrent enqueues and a flush", settled: first.count + concurrent.count)

        // The plain flush: delivers what is pending, returning when the attempt is over.
        let last = (0..<6).map { event("v\($0 % 2)", "b\($0)") }
        for event in last { sink.enqueue(event) }
        await sink.flush()
        try checkDelivered(subject, expected: first + concurrent + last, "after flush()")
        try checkCounters(sink, "after flush()", settled: first.count + concurrent.count + last.count)
        _ = await sink.shutdown(timeout: timeout)
    }

    private static func verifyShutdown(_ subject: Subject, timeout: Duration) async throws {
        let sink = subject.sink
        let pending = (0..<7).map { event("s\($0 % 2)", "s\($0)") }
        for event in pending { sink.enqueue(event) }
        let sentBefore = sink.counters.sent
        let report = await sink.shutdown(timeout: timeout)
        try require(report.drained && report.leftPending == 0, "shutdown must deliver what is pending: \(report)")
        try require(report.counters == sink.counters, "shutdown must report the sink's counters: \(report) vs \(sink.counters)")
        try require(report.delivered == report.counters.sent - sentBefore,
                    "shutdown's delivered count must be the events sent during it: \(report)")
        try checkDelivered(subject, expected: pending, "after shutdown")
        try checkCounters(sink, "after shutdown", settled: pending.count)

        let counted = sink.counters != TrackingCounters()
        let droppedBefore = sink.counters.dropped
        let late = event("late", "late-offer"), later = event("late", "late-enqueue")
        try require(!sink.offer(late), "offer after shutdown must answer false: the sink stopped taking events")
        sink.enqueue(later)
        _ = await sink.flush(timeout: .milliseconds(100))
        await sink.flush()
        try require(!subject.delivered().contains { $0.visitorId == "late" }, "an event offered after shutdown must never be delivered")
        if counted {
            try require(sink.counters.dropped == droppedBefore + 2,
                        "events refused after shutdown must count as dropped: \(sink.counters)")
        }
        try checkCounters(sink, "after events refused")
    }

    private static func verifyStop(_ subject: Subject, timeout: Duration) async throws {
        let sink = subject.sink
        let taken = (0..<3).map { event("x", "x\($0)") }
        for event in taken { sink.enqueue(event) }
        try require(await sink.flush(timeout: timeout), "flush(timeout:) must settle the events taken")
        sink.stop()
        try checkCounters(sink, "after stop()")
        try checkDelivered(subject, expected: taken, "after stop()")
    }

    // MARK: Checks

    private static func event(_ visitor: String, _ goal: String) -> TrackingEvent {
        TrackingEvent(accountId: "100", projectId: "200", visitorId: visitor, segments: nil,
                      payload: .conversion(goalId: goal, goalData: nil, bucketingData: nil))
    }

    private static func goal(_ event: TrackingEvent) -> String {
        if case .conversion(let goalId, _, _) = event.payload { return goalId }
        return event.eventType
    }

    private static func require(_ condition: Bool, _ message: @autoclosure () -> String) throws {
        if !condition { throw ContractViolation("TrackingSinkContract: " + message()) }
    }

    /// The counters' invariant; with `settled`, that exactly that many events were taken and
    /// sent and none is pending (for sinks that count).
    private static func checkCounters(_ sink: any TrackingSink, _ when: String, settled: Int? = nil) throws {
        let counters = sink.counters
        try require(counters.enqueued == counters.sent + counters.dropped + counters.rejected + counters.pending,
                    "\(when): enqueued must equal sent + dropped + rejected + pending: \(counters)")
        guard let settled, counters != TrackingCounters() else { return }
        try require(counters.sent == settled && counters.enqueued == settled && counters.pending == 0,
                    "\(when): \(settled) events taken and delivered, the counters say \(counters)")
    }

    /// Each expected event delivered exactly once, each visitor's in the order taken.
    private static func checkDelivered(_ subject: Subject, expected: [TrackingEvent], _ when: String) throws {
        let delivered = subject.delivered()
        var seen: [TrackingEvent: Int] = [:]
        for event in delivered { seen[event, default: 0] += 1 }
        let missing = expected.filter { seen[$0] == nil }
        try require(missing.isEmpty, "\(when): \(missing.count) event(s) taken never reached the receiver (first: \(missing.first.map(goal) ?? ""))")
        let repeated = seen.filter { $0.value > 1 }
        try require(repeated.isEmpty, "\(when): \(repeated.count) event(s) reached a receiver that took everything more than once")
        try require(delivered.count == expected.count, "\(when): \(delivered.count) event(s) delivered, \(expected.count) taken")
        for visitor in Set(expected.map(\.visitorId)) {
            let sent = delivered.filter { $0.visitorId == visitor }.map(goal)
            let taken = expected.filter { $0.visitorId == visitor }.map(goal)
            try require(sent == taken, "\(when): visitor \(visitor)'s events were delivered out of order: \(sent)")
        }
    }
}
