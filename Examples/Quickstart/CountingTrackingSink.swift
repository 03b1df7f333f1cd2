import ConvertSwiftSDK
import ConvertSynchronization

/// A tracking sink that counts the events it passes on to another: a decorator around the
/// default delivery queue, showing that the tracking port can be wrapped like any other.
final class CountingTrackingSink: TrackingSink {
    private let wrapped: any TrackingSink
    private let counts = Locked((bucketing: 0, conversions: 0))

    init(wrapping sink: any TrackingSink) {
        wrapped = sink
    }

    /// Bucketing and conversion events the wrapped sink took.
    var taken: (bucketing: Int, conversions: Int) { counts.value }

    func enqueue(_ event: TrackingEvent) {
        // `offer` is the one that says whether the event was taken; count through it.
        _ = offer(event)
    }

    func offer(_ event: TrackingEvent) -> Bool {
        let taken = wrapped.offer(event)
        if taken {
            counts.withValue { counts in
                switch event.payload {
                case .bucketing: counts.bucketing += 1
                case .conversion: counts.conversions += 1
                }
            }
        }
        return taken
    }

    func flush() async { await wrapped.flush() }
    func flush(timeout: Duration) async -> Bool { await wrapped.flush(timeout: timeout) }
    func shutdown(timeout: Duration) async -> TrackingShutdown { await wrapped.shutdown(timeout: timeout) }
    func stop() { wrapped.stop() }
    var counters: TrackingCounters { wrapped.counters }
}
