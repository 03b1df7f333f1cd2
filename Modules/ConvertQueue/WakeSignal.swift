import ConvertEnvironment
import ConvertSynchronization
import Foundation

/// Wakes one waiting task, or lets it wake itself at a deadline of `clock`. A signal sent while
/// nobody waits is remembered, so it is never lost.
final class WakeSignal: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
        /// Ends the wait at its deadline; cancelled when a signal comes first, so no sleep outlives its wait.
        var timer: Task<Void, Never>?
        var generation: UInt64 = 0
    }

    private let state = Locked(State())
    private let clock: any SleepClock

    init(clock: any SleepClock) { self.clock = clock }

    func signal() {
        let (toResume, timer): (CheckedContinuation<Void, Never>?, Task<Void, Never>?) = state.withValue { state in
            guard let waiter = state.waiter else {
                state.pending = true
                return (nil, nil)
            }
            defer {
                state.waiter = nil
                state.timer = nil
            }
            return (waiter, state.timer)
        }
        timer?.cancel()
        toResume?.resume()
    }

    /// Waits for a signal, or at most `timeout` of the clock when given.
    func wait(timeout: Duration?) async {
        await wait(until: timeout.map { clock.elapsed + $0 })
    }

    /// Waits for a signal, or until the clock reaches `deadline` when given.
    func wait(until deadline: Duration?) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow: Bool = state.withValue { state in
                if state.pending {
                    state.pending = false
                    return true
                }
                state.generation += 1
                state.waiter = continuation
                if let deadline {
                    let id = state.generation
                    let clock = clock
                    state.timer = Task { [weak self] in
                        guard (try? await clock.sleep(until: deadline)) != nil else { return }
                        self?.expire(id)
                    }
                }
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    private func expire(_ id: UInt64) {
        let toResume: CheckedContinuation<Void, Never>? = state.withValue { state in
            guard state.generation == id, let waiter = state.waiter else { return nil }
            state.waiter = nil
            state.timer = nil
            return waiter
        }
        toResume?.resume()
    }
}
