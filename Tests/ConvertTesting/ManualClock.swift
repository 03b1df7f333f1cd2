import ConvertEnvironment
import ConvertSynchronization
import Foundation

/// A clock the test moves by hand: a wall-clock date (``now``, ``timeSource``) and a
/// ``SleepClock`` whose sleepers wake only when ``advance(by:)`` passes their deadline.
///
/// ```swift
/// let clock = ManualClock()
/// let queue = TrackingQueue(transport: transport, endpoint: endpoint, clock: clock)
/// queue.enqueue(event)
/// try await clock.waitForSleepers()   // the queue is parked on its release interval
/// clock.advance(by: .seconds(1))      // and now it delivers
/// ```
public final class ManualClock: SleepClock, Sendable {
    private struct Sleeper {
        let id: UInt64
        let deadline: Duration
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var current: Date
        var monotonic: Duration = .zero
        var sleepers: [Sleeper] = []
        /// Sleeps cancelled before they were registered.
        var cancelled: Set<UInt64> = []
        var nextId: UInt64 = 0
    }

    private let state: Locked<State>

    /// A clock showing `start` as its date, at monotonic time zero.
    public init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        state = Locked(State(current: start))
    }

    /// The time now.
    public var now: Date { state.withValue { $0.current } }

    /// The monotonic time: how far the clock has been advanced since it was made.
    public var elapsed: Duration { state.withValue { $0.monotonic } }

    /// The deadlines of the sleeps under way, earliest first.
    public var deadlines: [Duration] { state.withValue { $0.sleepers.map(\.deadline).sorted() } }

    /// Moves the clock forward by `seconds`. A negative amount sets the date back (as a
    /// wall-clock correction would) and leaves the monotonic time where it is.
    public func advance(by seconds: TimeInterval) {
        let step = seconds > 0 ? Duration.seconds(seconds) : .zero
        move(date: seconds, monotonic: step)
    }

    /// Moves the clock forward by `duration` and wakes, earliest deadline first, every sleeper
    /// whose deadline is reached. A negative duration is ignored.
    public func advance(by duration: Duration) {
        guard duration > .zero else { return }
        move(date: Self.seconds(duration), monotonic: duration)
    }

    /// Moves the clock forward to `instant` of its monotonic time (nothing when already past it).
    public func advance(to instant: Duration) {
        advance(by: instant - elapsed)
    }

    /// Waits (polling briefly in real time) until at least `count` sleeps are under way, so the
    /// code under test is parked before the clock moves; throws when that takes over `timeout`.
    public func waitForSleepers(_ count: Int = 1, timeout: Duration = .patience) async throws {
        let giveUp = ContinuousClock.now + timeout
        while state.withValue({ $0.sleepers.count }) < count {
            guard ContinuousClock.now < giveUp else { throw TimedOut(waitingFor: count, found: deadlines.count) }
            await Task.yield()
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    /// ``waitForSleepers(_:timeout:)`` found too few sleeps under way.
    public struct TimedOut: Error, CustomStringConvertible {
        /// How many sleeps were awaited.
        public let waitingFor: Int
        /// How many were under way at the timeout.
        public let found: Int
        /// What went wrong, for the test log.
        public var description: String { "ManualClock: waited for \(waitingFor) sleeper(s), found \(found)" }
    }

    /// Suspends until ``advance(by:)`` moves ``elapsed`` to `deadline` or past it; throws
    /// `CancellationError` as soon as the task is cancelled.
    public func sleep(until deadline: Duration) async throws {
        try Task.checkCancellation()
        let id = state.withValue { state in
            state.nextId += 1
            return state.nextId
        }
        // A cancellation that lands after the sleeper woke leaves its mark; clear it.
        defer { state.withValue { _ = $0.cancelled.remove(id) } }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome: Result<Void, any Error>? = state.withValue { state in
                    if state.cancelled.contains(id) { return .failure(CancellationError()) }
                    if deadline <= state.monotonic { return .success(()) }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let continuation: CheckedContinuation<Void, any Error>? = state.withValue { state in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else {
                    state.cancelled.insert(id)
                    return nil
                }
                return state.sleepers.remove(at: index).continuation
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// The clock as a ``TimeSource`` port.
    public var timeSource: TimeSource { TimeSource { [self] in now } }

    private func move(date seconds: TimeInterval, monotonic step: Duration) {
        let due: [Sleeper] = state.withValue { state in
            state.current += seconds
            state.monotonic += step
            let monotonic = state.monotonic
            // Stable sort: equal deadlines wake in the order they went to sleep.
            let due = state.sleepers.filter { $0.deadline <= monotonic }.enumerated()
                .sorted { ($0.element.deadline, $0.offset) < ($1.element.deadline, $1.offset) }.map(\.element)
            state.sleepers.removeAll { $0.deadline <= monotonic }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) * 1e-18
    }
}
