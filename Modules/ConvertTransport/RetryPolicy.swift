import ConvertEnvironment

/// Exponential backoff with jitter: attempt n waits a random time in
/// `[delay/2, delay]`, where `delay = min(maximum, initial * 2^n)`.
///
/// The settings of the tracking queue's and the config loader's retries; the waits are
/// computed by ``backoff`` (the one backoff, with jitter down to half).
public struct RetryPolicy: Sendable, Hashable {
    /// The delay before the first retry, doubled for each further one (1 s by default).
    public var initial: Duration
    /// The longest delay, however many attempts failed (60 s by default).
    public var maximum: Duration

    /// Retries that wait `initial`, doubling up to `maximum`, each shortened at random by up to half.
    public init(initial: Duration = .seconds(1), maximum: Duration = .seconds(60)) {
        self.initial = initial
        self.maximum = maximum
    }

    /// The policy as the package's ``Backoff`` (jitter: ``Backoff/Jitter-swift.enum/upToHalf``).
    package var backoff: Backoff { Backoff(initial: initial, maximum: maximum, jitter: .upToHalf) }

    /// The wait before retry number `attempt` (0-based), with `unit` in `0...1` choosing the jitter.
    package func delay(attempt: Int, unit: Double) -> Duration {
        backoff.delay(attempt: attempt, unit: unit)
    }

    /// The wait before retry number `attempt`, with random jitter.
    package func delay(attempt: Int) -> Duration {
        backoff.delay(attempt: attempt)
    }
}
