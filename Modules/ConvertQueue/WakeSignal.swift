import ConvertSupport
import Foundation

/// Wakes one waiting task, or lets it wake itself at a deadline of `clock`. A signal sent while
/// nobody waits is remembered, so it is never lost.
final class WakeSignal: @unchecked Sendable {
    // `pending`, `waiter`, `timer` and `generation` are guarded by `lock`.
    private let lock = NSLock()
    private var pending = false
    private var waiter: CheckedContinuation<Void, Never>?
    /// Ends the wait at its deadline; cancelled when a signal comes first, so no sleep outlives its wait.
    private var timer: Task<Void, Never>?
    private var generation: UInt64 = 0
    private let clock: any SleepClock

    init(clock: any SleepClock) { self.clock = clock }

    func signal() {
        let (toResume, timer): (CheckedContinuation<Void, Never>?, Task<Void, Never>?) = lock.withLock {
            guard let waiter else {
                pending = true
                return (nil, nil)
            }
            defer {
                self.waiter = nil
                self.timer = nil
            }
            return (waiter, self.timer)
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
            let resumeNow: Bool = lock.withLock {
                if pending {
                    pending = false
                    return true
                }
                generation += 1
                waiter = continuation
                if let deadline {
                    let id = generation
                    let clock = clock
                    timer = Task { [weak self] in
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
        let toResume: CheckedContinuation<Void, Never>? = lock.withLock {
            guard generation == id, let waiter else { return nil }
            self.waiter = nil
            timer = nil
            return waiter
        }
        toResume?.resume()
    }
}
