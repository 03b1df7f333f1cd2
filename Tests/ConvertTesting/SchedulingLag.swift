import ConvertSynchronization

/// How late this process's cooperative pool ran work while watched: a task sleeps 5 ms in turn
/// and notes how much later than asked it woke. A timing test adds the worst of it to the bound
/// it holds the code to, since the code bounds its own waits, not the scheduler's: with the
/// whole suite on two cores a task can wait over a second for a thread.
public final class SchedulingLag: Sendable {
    private struct State {
        var worst: Duration = .zero
        /// When the nap under way began (before the task first ran: when watching began).
        var napSince: ContinuousClock.Instant
        var stopped = false
    }

    private static let nap = Duration.milliseconds(5)
    private let state: Locked<State>

    /// Starts watching.
    public init() {
        let state = Locked(State(napSince: .now))
        self.state = state
        Task.detached {
            while !state.value.stopped {
                try? await Task.sleep(for: Self.nap)
                let now = ContinuousClock.now
                state.withValue { state in
                    state.worst = max(state.worst, now - state.napSince - Self.nap)
                    state.napSince = now
                }
            }
        }
    }

    deinit { state.withValue { $0.stopped = true } }

    /// The latest wake-up so far.
    public var worst: Duration { state.value.worst }

    /// Stops watching; the latest wake-up seen, the nap still under way counted (a task that
    /// never got a thread while watched woke up at least that late).
    @discardableResult
    public func stop() -> Duration {
        let now = ContinuousClock.now
        return state.withValue { state in
            state.stopped = true
            return max(state.worst, now - state.napSince - Self.nap)
        }
    }
}
