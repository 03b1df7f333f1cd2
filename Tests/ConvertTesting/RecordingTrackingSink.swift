import ConvertEvents
import ConvertSupport
import Foundation

/// A tracking sink that keeps every event it is given, for assertions.
///
/// ```swift
/// let sink = RecordingTrackingSink()
/// // … run the SDK on it …
/// #expect(sink.events.map(\.eventType) == ["bucketing"])
/// ```
public final class RecordingTrackingSink: TrackingSink, Sendable {
    private let recorded = Locked<[TrackingEvent]>([])
    private let flushes = Locked(0)

    /// A sink with no events yet.
    public init() {}

    public func enqueue(_ event: TrackingEvent) {
        recorded.withValue { $0.append(event) }
    }

    public func flush() async {
        flushes.withValue { $0 += 1 }
    }

    /// Every event enqueued so far, in order.
    public var events: [TrackingEvent] { recorded.value }

    /// The events of one visitor.
    public func events(for visitorId: String) -> [TrackingEvent] {
        events.filter { $0.visitorId == visitorId }
    }

    /// How often `flush()` was called.
    public var flushCount: Int { flushes.value }

    /// Forgets everything recorded.
    public func reset() {
        recorded.set([])
    }
}
