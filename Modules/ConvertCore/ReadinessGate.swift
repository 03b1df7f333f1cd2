import Foundation

/// A latch that opens once (or fails once) and releases every waiter.
final class ReadinessGate: @unchecked Sendable {
    private enum State {
        case pending
        case open
        case failed(ConvertError)
    }

    // `state` and `waiters` are guarded by `lock`.
    private let lock = NSLock()
    private var state = State.pending
    private var waiters: [UUID: CheckedContinuation<Void, any Error>] = [:]

    var isOpen: Bool {
        lock.withLock { if case .open = state { return true } else { return false } }
    }

    /// Opens the gate; returns false when it was already settled.
    @discardableResult
    func open() -> Bool { settle(.open) }

    /// Fails the gate unless it already opened; returns false when it was already settled.
    @discardableResult
    func fail(_ error: ConvertError) -> Bool { settle(.failed(error)) }

    private func settle(_ new: State) -> Bool {
        let released: [CheckedContinuation<Void, any Error>]? = lock.withLock {
            guard case .pending = state else { return nil }
            state = new
            defer { waiters.removeAll() }
            return Array(waiters.values)
        }
        guard let released else { return false }
        for waiter in released {
            if case .failed(let error) = new { waiter.resume(throwing: error) } else { waiter.resume() }
        }
        return true
    }

    /// Returns once the gate opens; throws its failure, or ``ConvertError/cancelled`` when the
    /// waiting task is cancelled.
    func wait() async throws {
        let id = UUID()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let immediate: Result<Void, ConvertError>? = lock.withLock {
                    switch state {
                    case .open: return .success(())
                    case .failed(let error): return .failure(error)
                    case .pending:
                        if Task.isCancelled { return .failure(.cancelled) }
                        waiters[id] = continuation
                        return nil
                    }
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            let waiter = lock.withLock { waiters.removeValue(forKey: id) }
            waiter?.resume(throwing: ConvertError.cancelled)
        }
    }
}
