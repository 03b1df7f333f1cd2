/// Exponential backoff with jitter: attempt n waits a random time in
/// `[delay/2, delay]`, where `delay = min(maximum, initial * 2^n)`.
public struct RetryPolicy: Sendable, Hashable {
    /// The delay before the first retry, doubled for each further one (1 s by default).
    public var initial: Duration
    /// The longest delay, however many attempts failed (60 s by default).
    public var maximum: Duration

    /// A policy doubling from `initial` up to `maximum`.
    public init(initial: Duration = .seconds(1), maximum: Duration = .seconds(60)) {
        self.initial = initial
        self.maximum = maximum
    }

    /// The wait before retry number `attempt` (0-based), with `unit` in `0...1` choosing the jitter.
    public func delay(attempt: Int, unit: Double) -> Duration {
        let factor = Double(1 << min(max(attempt, 0), 30))
        let capped = min(initial * factor, maximum)
        return capped * (0.5 + 0.5 * min(max(unit, 0), 1))
    }

    /// The wait before retry number `attempt`, with random jitter.
    public func delay(attempt: Int) -> Duration {
        delay(attempt: attempt, unit: Double.random(in: 0...1))
    }
}
