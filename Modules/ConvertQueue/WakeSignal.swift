import Foundation

/// Wakes one waiting task, or lets it wake itself after a timeout. A signal sent while nobody
/// waits is remembered, so it is never lost.
final class WakeSignal: @unchecked Sendable {
    // `pending`, `waiter` and `generation` are guarded by `lock`.
    private let lock = NSLock()
    private var pending = false
    private var waiter: CheckedContinuation<Void, Never>?
    private var generation: UInt64 = 0

    func signal() {
        let toResume: CheckedContinuation<Void, Never>? = lock.withLock {
            if let waiter {
                self.waiter = nil
                return waiter
            }
            pending = true
            return nil
        }
        toResume?.resume()
    }

    /// Waits for a signal, or at most `timeout` when given.
    func wait(timeout: Duration?) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let id: UInt64? = lock.withLock {
                if pending {
                    pending = false
                    return nil
                }
                generation += 1
                waiter = continuation
                return generation
            }
            guard let id else {
                continuation.resume()
                return
            }
            if let timeout {
                Task { [weak self] in
                    try? await Task.sleep(for: timeout)
                    self?.expire(id)
                }
            }
        }
    }

    private func expire(_ id: UInt64) {
        let toResume: CheckedContinuation<Void, Never>? = lock.withLock {
            guard generation == id, let waiter else { return nil }
            self.waiter = nil
            return waiter
        }
        toResume?.resume()
    }
}
