/// Counts occurrences and says when to report them: the first at once, then at most one
/// report (with the count since the last) per interval.
///
/// The package's one log throttle: a warning that may repeat is written through one of these,
/// at the instants of its owner's injected ``SleepClock`` (``note(on:)``), every
/// ``logInterval`` unless the owner says otherwise.
package struct RateLimitedCount: Sendable {
    /// How often a repeated log line is written at most: once per 10 seconds.
    package static let logInterval: Duration = .seconds(10)

    package let interval: Duration
    private var unreported = 0
    private var lastReport: Duration?

    /// A count reported at most once per `interval` (``logInterval`` by default).
    package init(interval: Duration = RateLimitedCount.logInterval) { self.interval = interval }

    /// Notes one occurrence at `now` (an instant of the owner's clock); returns the count to
    /// report now, or `nil`.
    package mutating func note(now: Duration) -> Int? {
        unreported += 1
        if let lastReport, now - lastReport < interval { return nil }
        lastReport = now
        defer { unreported = 0 }
        return unreported
    }

    /// Notes one occurrence at `clock`'s current instant; returns the count to report now, or `nil`.
    package mutating func note(on clock: any SleepClock) -> Int? {
        note(now: clock.elapsed)
    }
}
