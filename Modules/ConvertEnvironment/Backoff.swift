/// Exponential backoff: wait number `attempt` (0-based) is `initial × 2^attempt`, at most
/// `maximum` (the doubling stops after 30 steps), then shortened by ``jitter``.
///
/// The one backoff of the package: the tracking queue and the config loader (through
/// `RetryPolicy`, with ``Jitter-swift.enum/upToHalf``), the Redis client's reconnects and the
/// shared visitor store's write retries (without jitter). It computes waits only; the caller
/// waits them out on its own injected ``SleepClock``.
///
/// ```swift
/// let backoff = Backoff(initial: .milliseconds(100), maximum: .seconds(5))
/// backoff.delay(afterFailures: 3)   // 400 ms
/// ```
package struct Backoff: Sendable, Hashable {
    /// How a wait is shortened at random.
    package enum Jitter: Sendable, Hashable {
        /// The full wait, always.
        case none
        /// A random wait between half the full wait and the full wait.
        case upToHalf
    }

    /// The first wait.
    package var initial: Duration
    /// The longest wait.
    package var maximum: Duration
    /// How each wait is shortened at random.
    package var jitter: Jitter

    /// A backoff starting at `initial`, doubling up to `maximum`, shortened by `jitter`.
    package init(initial: Duration, maximum: Duration, jitter: Jitter = .none) {
        self.initial = initial
        self.maximum = maximum
        self.jitter = jitter
    }

    /// The wait before retry number `attempt` (0-based) before jitter:
    /// `min(maximum, initial × 2^min(attempt, 30))`.
    package func ceiling(attempt: Int) -> Duration {
        var wait = initial
        var steps = min(max(attempt, 0), 30)
        // Doubling stops at the maximum, so a large attempt never overflows.
        while steps > 0 && wait < maximum {
            wait *= 2
            steps -= 1
        }
        return min(wait, maximum)
    }

    /// The wait before retry number `attempt` (0-based), with `unit` in `0...1` choosing the
    /// jitter (`1` is the full wait; ignored without jitter).
    package func delay(attempt: Int, unit: Double) -> Duration {
        let full = ceiling(attempt: attempt)
        switch jitter {
        case .none: return full
        case .upToHalf: return full * (0.5 + 0.5 * min(max(unit, 0), 1))
        }
    }

    /// The wait before retry number `attempt` (0-based), with random jitter.
    package func delay(attempt: Int) -> Duration {
        switch jitter {
        case .none: return ceiling(attempt: attempt)
        case .upToHalf: return delay(attempt: attempt, unit: Double.random(in: 0...1))
        }
    }

    /// The wait after `failures` consecutive failures (the first failure waits `initial`);
    /// `delay(attempt: failures - 1)`.
    package func delay(afterFailures failures: Int) -> Duration {
        delay(attempt: max(failures, 1) - 1)
    }
}
