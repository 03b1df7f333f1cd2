import ConvertEvents
import ConvertSynchronization
import ConvertTracking
import Foundation

/// A tracking sink that keeps every event it is given, for assertions.
///
/// ```swift
/// let sink = RecordingTrackingSink()
/// // … run the SDK on it …
/// #expect(sink.events.map(\.eventType) == ["bucketing"])
/// ```
///
/// It keeps the ``TrackingSink`` contract (``TrackingSinkContract``): an event taken counts as
/// sent at once, and after ``shutdown(timeout:)`` events are refused and counted as dropped.
public final class RecordingTrackingSink: TrackingSink, Sendable {
    private struct State {
        var events: [TrackingEvent] = []
        var open = true
        var counters = TrackingCounters()
    }

    private let state = Locked(State())
    private let flushes = Locked(0)

    /// A sink with no events yet.
    public init() {}

    public func enqueue(_ event: TrackingEvent) {
        _ = offer(event)
    }

    /// Records `event`; `false` (the event counted as dropped) after ``shutdown(timeout:)``.
    public func offer(_ event: TrackingEvent) -> Bool {
        state.withValue { state in
            state.counters.enqueued += 1
            guard state.open else {
                state.counters.dropped += 1
                return false
            }
            state.events.append(event)
            state.counters.sent += 1
            return true
        }
    }

    public func flush() async {
        flushes.withValue { $0 += 1 }
    }

    /// Flushes once, then refuses later events.
    public func shutdown(timeout: Duration) async -> TrackingShutdown {
        await flush()
        let counters = state.withValue { state in
            state.open = false
            return state.counters
        }
        return TrackingShutdown(delivered: 0, leftPending: 0, counters: counters)
    }

    /// Events taken (each counted as sent at once) and events refused after a shutdown.
    public var counters: TrackingCounters { state.withValue { $0.counters } }

    /// Every event enqueued so far, in order.
    public var events: [TrackingEvent] { state.withValue { $0.events } }

    /// The events of one visitor.
    public func events(for visitorId: String) -> [TrackingEvent] {
        events.filter { $0.visitorId == visitorId }
    }

    /// How often `flush()` was called.
    public var flushCount: Int { flushes.value }

    /// Forgets every event recorded (the counters go on).
    public func reset() {
        state.withValue { $0.events = [] }
    }
}

/// A ``TrackingDelivery`` that records every batch it is handed and answers from a closure
/// (``TrackingDeliveryAnswer/delivered`` by default): a `TrackingQueue` with no HTTP in it.
///
/// ```swift
/// let delivery = RecordingTrackingDelivery()
/// let queue = TrackingQueue(delivery: delivery)
/// queue.enqueue(event)
/// _ = await queue.flush(timeout: .seconds(5))
/// #expect(delivery.delivered == [event])
/// ```
public final class RecordingTrackingDelivery: TrackingDelivery, Sendable {
    private struct State {
        var batches: [[TrackingEvent]] = []
        var delivered: [TrackingEvent] = []
    }

    private let state = Locked(State())
    private let answer: @Sendable ([TrackingEvent]) -> TrackingDeliveryAnswer

    /// A delivery answering each batch with `answer`.
    public init(_ answer: @escaping @Sendable ([TrackingEvent]) -> TrackingDeliveryAnswer = { _ in .delivered }) {
        self.answer = answer
    }

    /// Records the batch and answers it.
    public func deliver(_ events: [TrackingEvent]) async -> TrackingDeliveryAnswer {
        let answer = answer(events)
        state.withValue { state in
            state.batches.append(events)
            if answer == .delivered { state.delivered += events }
        }
        return answer
    }

    /// Every batch handed over, in order, whatever the answer.
    public var batches: [[TrackingEvent]] { state.withValue { $0.batches } }

    /// The events of the batches answered ``TrackingDeliveryAnswer/delivered``, in order.
    public var delivered: [TrackingEvent] { state.withValue { $0.delivered } }
}
