import ConvertSynchronization
import Foundation

/// A latch that opens once (or fails once) and releases every waiter.
final class ReadinessGate: Sendable {
    private enum Phase {
        case pending
        case open
        case failed(ConvertError)
    }

    private struct State {
        var phase = Phase.pending
        var waiters: [UUID: CheckedContinuation<Void, any Error>] = [:]
    }

    private let state = Locked(State())

    var isOpen: Bool {
        state.withValue { if case .open = $0.phase { return true } else { return false } }
    }

    /// How the gate settled: `nil` while it is pending.
    var settled: Result<Void, ConvertError>? {
        state.withValue { state in
            switch state.phase {
            case .pending: return nil
            case .open: return .success(())
            case .failed(let error): return .failure(error)
            }
        }
    }

    /// Opens the gate; returns false when it was already settled.
    @discardableResult
    func open() -> Bool { settle(.open) }

    /// Fails the gate unless it already opened; returns false when it was already settled.
    @discardableResult
    func fail(_ error: ConvertError) -> Bool { settle(.failed(error)) }

    private func settle(_ new: Phase) -> Bool {
        let released: [CheckedContinuation<Void, any Error>]? = state.withValue { state in
            guard case .pending = state.phase else { return nil }
            state.phase = new
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
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
        // Settled: answered without suspending, so a busy cooperative pool cannot delay it.
        if let settled { return try settled.get() }
        let id = UUID()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let immediate: Result<Void, ConvertError>? = state.withValue { state in
                    switch state.phase {
                    case .open: return .success(())
                    case .failed(let error): return .failure(error)
                    case .pending:
                        if Task.isCancelled { return .failure(.cancelled) }
                        state.waiters[id] = continuation
                        return nil
                    }
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            let waiter = state.withValue { $0.waiters.removeValue(forKey: id) }
            waiter?.resume(throwing: ConvertError.cancelled)
        }
    }
}
