import ConvertSynchronization
import Foundation

/// A latch that opens once (or fails once) and releases every waiter.
final class ReadinessGate: Sendable {
    private struct State {
        /// `nil` while pending.
        var outcome: Result<Void, ConvertError>?
        var waiters: [UUID: CheckedContinuation<Void, any Error>] = [:]
    }

    private let state = Locked(State())

    /// How the gate settled: `nil` while it is pending.
    var settled: Result<Void, ConvertError>? { state.withValue { $0.outcome } }

    /// Opens the gate; returns false when it was already settled.
    @discardableResult
    func open() -> Bool { settle(.success(())) }

    /// Fails the gate unless it already opened; returns false when it was already settled.
    @discardableResult
    func fail(_ error: ConvertError) -> Bool { settle(.failure(error)) }

    private func settle(_ outcome: Result<Void, ConvertError>) -> Bool {
        let released: [CheckedContinuation<Void, any Error>]? = state.withValue { state in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        guard let released else { return false }
        for waiter in released { waiter.resume(with: outcome.mapError { $0 }) }
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
                    if let outcome = state.outcome { return outcome }
                    if Task.isCancelled { return .failure(.cancelled) }
                    state.waiters[id] = continuation
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            let waiter = state.withValue { $0.waiters.removeValue(forKey: id) }
            waiter?.resume(throwing: ConvertError.cancelled)
        }
    }
}
