/// Counts occurrences and says when to report them: the first at once, then at most one
/// report (with the count since the last) per interval.
package struct RateLimitedCount: Sendable {
    package let interval: Duration
    private var unreported = 0
    private var lastReport: Duration?

    package init(interval: Duration) { self.interval = interval }

    /// Notes one occurrence at `now` (an instant of the owner's clock); returns the count to
    /// report now, or `nil`.
    package mutating func note(now: Duration) -> Int? {
        unreported += 1
        if let lastReport, now - lastReport < interval { return nil }
        lastReport = now
        defer { unreported = 0 }
        return unreported
    }
}
