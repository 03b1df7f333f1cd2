import ConvertEnvironment
import ConvertSynchronization
import Foundation

/// Outages: when a failure means the server is gone, and the probe that finds it back.
extension RedisPool {
    /// Whether `error`, ending an exchange that waited `waited`, says the server is unreachable:
    /// a refused or broken connection, or no reply in a wait long enough to mean it (a call that
    /// spent its budget waiting for a pooled connection says nothing about the server).
    func isOutage(_ error: RedisError, waited: Duration) -> Bool {
        switch error {
        case .connectionFailed: true
        case .timeout: waited >= configuration.commandTimeout / 2
        default: false
        }
    }

    /// Makes the server unavailable (once per outage): idle connections closed, queued calls
    /// failed, subscribers told, a probe scheduled.
    func noteOutage(_ error: RedisError) {
        var idle: [RedisConnection] = []
        var queued: [Request] = []
        var startProbe = false
        let began = state.withValue { state -> Bool in
            guard !state.closed, state.outage == nil else { return false }
            let now = clock.elapsed
            state.outage = Outage(since: now, failures: 1, retryAt: now + backoff.delay(afterFailures: 1), cause: error)
            idle = state.idle
            state.idle = []
            state.open -= idle.count
            queued = state.queue
            state.queue = []
            if !state.probing {
                state.probing = true
                startProbe = true
            }
            return true
        }
        guard began else { return }
        idle.forEach { $0.close() }
        for request in queued { request.done(.failure(error)) }
        publish(.unavailable(error))
        if startProbe { Task.detached { [self] in await probeUntilAvailable() } }
    }

    /// Probes the server after each backoff until it answers, then makes it available again.
    private func probeUntilAvailable() async {
        while true {
            guard let retryAt = state.withValue({ state -> Duration? in
                if state.closed || state.outage == nil {
                    state.probing = false
                    return nil
                }
                return state.outage?.retryAt
            }) else { return }
            let wait = retryAt - clock.elapsed
            if wait > .zero { try? await clock.sleep(for: wait) }
            if state.withValue({ $0.closed }) {
                state.withValue { $0.probing = false }
                return
            }
            let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Lease, RedisError>, Never>) in
                let queued = state.withValue { state -> Bool in
                    guard !state.closed else { return false }
                    state.jobs.append(.probe({ continuation.resume(returning: $0) }))
                    return true
                }
                if queued { startConnectorJob() } else { continuation.resume(returning: .failure(.clientClosed)) }
            }
            switch result {
            case .success(let lease):
                let downFor = state.withValue { state -> Duration? in
                    guard !state.closed, let outage = state.outage else { return nil }
                    state.outage = nil
                    state.probing = false
                    state.open += 1
                    return clock.elapsed - outage.since
                }
                guard let downFor else {
                    lease.connection.close()
                    state.withValue { $0.probing = false }
                    return
                }
                release(lease)
                publish(.available(after: downFor))
                return
            case .failure(let error):
                let closed = state.withValue { state -> Bool in
                    guard !state.closed, var outage = state.outage else { return true }
                    outage.failures += 1
                    outage.retryAt = clock.elapsed + backoff.delay(afterFailures: outage.failures)
                    outage.cause = error
                    state.outage = outage
                    return false
                }
                if closed {
                    state.withValue { $0.probing = false }
                    return
                }
            }
        }
    }
}
