import ConvertEnvironment
import ConvertSynchronization
import Dispatch
import Foundation

/// The connector thread: opens connections (and runs their setups) off the callers' threads.
extension RedisPool {
    func startConnectorJob() {
        let start = state.withValue { state -> Bool in
            defer { state.connectorStarted = true }
            return !state.connectorStarted
        }
        if start {
            Thread { [self] in runConnector() }.start()
        }
        jobSignal.signal()
    }

    private func runConnector() {
        nameCurrentThread("Redis.cn.\(number)")
        while true {
            jobSignal.wait()
            let next = state.withValue { state -> (Job, [(String, Setup)])? in
                guard !state.jobs.isEmpty else { return nil }
                return (state.jobs.removeFirst(), state.setups.map { ($0.name, $0.setup) })
            }
            guard let (job, setups) = next else { continue }
            switch job {
            case .stop:
                return
            case .pool:
                let wanted = state.withValue { state -> Bool in
                    guard state.outage == nil, !state.closed else {
                        state.open -= 1
                        return false
                    }
                    return true
                }
                guard wanted else { continue }
                let result = open(setups, probe: false)
                switch result {
                case .success(let lease):
                    release(lease)
                case .failure(let error):
                    connectFailed(error)
                }
            case .probe(let done):
                let result = open(setups, probe: true)
                // Handed over through the pool's lock too, which the prober takes before using
                // the connection: ThreadSanitizer does not see the continuation order the
                // connection's set-up before its use on another thread.
                state.withValue { _ in }
                done(result)
            }
        }
    }

    /// A new connection with every setup run (and `PING` answered, for a probe).
    private func open(_ setups: [(String, Setup)], probe: Bool) -> Result<Lease, RedisError> {
        var commands = setups.flatMap(\.1.commands)
        if probe { commands.append(.ping) }
        do {
            let connection = try RedisConnection(configuration: configuration, transport: transport, setup: commands)
            var replies = connection.setupReplies[...]
            for (_, setup) in setups {
                setup.handle(Array(replies.prefix(setup.commands.count)))
                replies = replies.dropFirst(setup.commands.count)
            }
            if probe, replies.first?.stringValue != "PONG" {
                connection.close()
                return .failure(.protocolError(reason: "PING answered a \(replies.first?.summary ?? "nothing")"))
            }
            return .success(Lease(connection: connection))
        } catch {
            return .failure(error)
        }
    }

    /// A connection for the pool could not be opened: the server is unavailable when the
    /// transport failed; otherwise (a refused `AUTH`, say) the queued calls are told, unless
    /// other connections may still serve them.
    private func connectFailed(_ error: RedisError) {
        let transport: Bool
        switch error {
        case .connectionFailed, .timeout: transport = true
        default: transport = false
        }
        var queued: [Request] = []
        state.withValue { state in
            state.open -= 1
            if !transport, state.open == 0 {
                queued = state.queue
                state.queue = []
            }
        }
        for request in queued { request.done(.failure(error)) }
        // The callers waiting then get this connect's error: the cause, rather than a summary.
        if transport { noteOutage(error) }
    }
}
