/// Monotonic time and sleeping, as a port: the tracking queue and the config loader measure
/// intervals and wait through it, so tests can move time by hand instead of sleeping.
///
/// Instants are the time elapsed since the clock's own origin; they never go backwards.
///
/// Implementation requirements: callable from any task, concurrently; a sleep ends by throwing
/// `CancellationError` as soon as its task is cancelled.
public protocol SleepClock: Sendable {
    /// The time elapsed since the clock's origin.
    var elapsed: Duration { get }

    /// Suspends until ``elapsed`` reaches `deadline` (at once if it already has).
    ///
    /// - Throws: `CancellationError` when the task is cancelled first.
    func sleep(until deadline: Duration) async throws
}

extension SleepClock {
    /// Suspends for `duration` from now.
    ///
    /// - Throws: `CancellationError` when the task is cancelled first.
    public func sleep(for duration: Duration) async throws {
        try await sleep(until: elapsed + duration)
    }
}

/// The system's monotonic clock (`ContinuousClock`, which keeps counting while the machine sleeps).
public struct ContinuousSleepClock: SleepClock {
    // One origin for the process, so instants from different values of this clock compare.
    private static let origin = ContinuousClock.now

    /// The system clock.
    public init() {}

    /// The time elapsed since the process first read this clock.
    public var elapsed: Duration { ContinuousClock.now - Self.origin }

    /// Sleeps on `ContinuousClock` until `deadline`.
    public func sleep(until deadline: Duration) async throws {
        try await ContinuousClock().sleep(until: Self.origin + deadline)
    }
}

extension SleepClock where Self == ContinuousSleepClock {
    /// The system's monotonic clock; the default wherever a clock is taken.
    public static var continuous: ContinuousSleepClock { ContinuousSleepClock() }
}
