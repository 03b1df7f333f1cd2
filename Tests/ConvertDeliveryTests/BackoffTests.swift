import ConvertSwiftSDK
import ConvertTesting
import ConvertTransport
import Testing

/// The waits of the three backoffs `Backoff` replaced, as they were written, for comparison.
private enum Former {
    /// The tracking queue's and config loader's `RetryPolicy`.
    static func retryPolicy(initial: Duration, maximum: Duration, attempt: Int, unit: Double) -> Duration {
        let factor = Double(1 << min(max(attempt, 0), 30))
        let capped = min(initial * factor, maximum)
        return capped * (0.5 + 0.5 * min(max(unit, 0), 1))
    }

    /// The Redis client's reconnect wait.
    static func redis(initial: Duration, maximum: Duration, failures: Int) -> Duration {
        var wait = initial
        for _ in 1..<max(failures, 1) {
            wait *= 2
            if wait >= maximum { return maximum }
        }
        return min(wait, maximum)
    }

    /// The shared visitor store's write retry (called after one failure or more).
    static func sharedStore(initial: Duration, maximum: Duration, failures: Int) -> Duration {
        var delay = initial
        for _ in 1..<min(failures, 30) where delay < maximum { delay = delay * 2 }
        return min(delay, maximum)
    }
}

@Suite struct BackoffTests {
    private let settings: [(Duration, Duration)] = [
        (.seconds(1), .seconds(60)), (.milliseconds(5), .milliseconds(50)), (.milliseconds(200), .seconds(30)),
        (.milliseconds(100), .seconds(5)), (.seconds(30), .seconds(30)), (.seconds(3600), .seconds(3600)),
        (.milliseconds(20), .seconds(5)), (.seconds(10), .seconds(1)),
    ]

    @Test func theOneBackoffWaitsWhatEachFormerOneWaited() {
        for (initial, maximum) in settings {
            let policy = RetryPolicy(initial: initial, maximum: maximum)
            let plain = Backoff(initial: initial, maximum: maximum)
            for attempt in 0..<40 {
                for unit in [0, 0.25, 0.5, 1, -1, 2] {
                    #expect(policy.delay(attempt: attempt, unit: unit)
                            == Former.retryPolicy(initial: initial, maximum: maximum, attempt: attempt, unit: unit),
                            "RetryPolicy(\(initial), \(maximum)) attempt \(attempt) unit \(unit)")
                }
                let failures = attempt + 1
                #expect(plain.delay(afterFailures: failures) == Former.redis(initial: initial, maximum: maximum, failures: failures),
                        "reconnect \(initial), \(maximum) after \(failures)")
                #expect(plain.delay(afterFailures: failures) == Former.sharedStore(initial: initial, maximum: maximum, failures: failures),
                        "write retry \(initial), \(maximum) after \(failures)")
            }
        }
    }

    @Test func jitterShortensByAtMostHalfAndNoJitterNever() {
        let jittered = Backoff(initial: .seconds(2), maximum: .seconds(60), jitter: .upToHalf)
        let plain = Backoff(initial: .seconds(2), maximum: .seconds(60))
        for attempt in 0..<8 {
            let full = plain.ceiling(attempt: attempt)
            #expect(full == min(.seconds(2 << attempt), .seconds(60)))
            for _ in 0..<20 {
                let wait = jittered.delay(attempt: attempt)
                #expect(wait >= full / 2 && wait <= full, "\(wait) for \(full)")
                #expect(plain.delay(attempt: attempt) == full)
            }
        }
        #expect(plain.delay(afterFailures: 0) == .seconds(2), "no failure yet waits the first wait")
        #expect(Backoff(initial: .seconds(1), maximum: .seconds(Int64.max)).ceiling(attempt: 1_000) == .seconds(1 << 30),
                "doubling stops after 30 steps instead of overflowing")
    }

    @Test func theLogThrottleReportsOncePerTenSecondsOnTheOwnersClock() {
        let clock = ManualClock()
        var count = RateLimitedCount()
        #expect(count.interval == .seconds(10) && RateLimitedCount.logInterval == .seconds(10))
        #expect(count.note(on: clock) == 1, "the first at once")
        clock.advance(by: .milliseconds(9_999))
        #expect(count.note(on: clock) == nil)
        #expect(count.note(on: clock) == nil)
        clock.advance(by: .milliseconds(1))
        #expect(count.note(on: clock) == 3, "then the count since the last report")
    }
}
