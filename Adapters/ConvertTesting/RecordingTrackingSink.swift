import ConvertEvents
import Foundation

/// A tracking sink that keeps every event it is given, for assertions.
///
/// ```swift
/// let sink = RecordingTrackingSink()
/// // … run the SDK on it …
/// #expect(sink.events.map(\.eventType) == ["bucketing"])
/// ```
public final class RecordingTrackingSink: TrackingSink, @unchecked Sendable {
    // `recorded` and `flushes` are guarded by `lock`.
    private let lock = NSLock()
    private var recorded: [TrackingEvent] = []
    private var flushes = 0

    public init() {}

    public func enqueue(_ event: TrackingEvent) {
        lock.withLock { recorded.append(event) }
    }

    public func flush() async {
        lock.withLock { flushes += 1 }
    }

    /// Every event enqueued so far, in order.
    public var events: [TrackingEvent] { lock.withLock { recorded } }

    /// The events of one visitor.
    public func events(for visitorId: String) -> [TrackingEvent] {
        events.filter { $0.visitorId == visitorId }
    }

    /// How often `flush()` was called.
    public var flushCount: Int { lock.withLock { flushes } }

    /// Forgets everything recorded.
    public func reset() {
        lock.withLock { recorded.removeAll() }
    }
}
