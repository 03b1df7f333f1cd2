import ConvertSynchronization

/// How late this process's cooperative pool ran work while watched: a task sleeps 5 ms in turn
/// and notes how much later than asked it woke. A timing test adds the worst of it to the bound
/// it holds the code to, since the code bounds its own waits, not the scheduler's: with the
/// whole suite on two cores a task can wait half a second for a thread.
public final class SchedulingLag: Sendable {
    private let state = Locked((worst: Duration.zero, stopped: false))

    /// Starts watching.
    public init() {
        let state = state
        let nap = Duration.milliseconds(5)
        Task.detached {
            while !state.value.stopped {
                let asked = ContinuousClock.now
                try? await Task.sleep(for: nap)
                let late = ContinuousClock.now - asked - nap
                state.withValue { $0.worst = max($0.worst, late) }
            }
        }
    }

    deinit { state.withValue { $0.stopped = true } }

    /// The latest wake-up so far.
    public var worst: Duration { state.value.worst }

    /// Stops watching; the latest wake-up seen.
    @discardableResult
    public func stop() -> Duration {
        state.withValue { state in
            state.stopped = true
            return state.worst
        }
    }
}
