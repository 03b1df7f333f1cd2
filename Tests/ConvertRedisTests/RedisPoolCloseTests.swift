@testable import ConvertRedis
import ConvertEnvironment
import ConvertSynchronization
import Testing

@Suite struct RedisPoolCloseTests {
    /// A probe queued for the connector when the client closes is answered: the task probing for
    /// the server's return would otherwise wait forever on it.
    @Test func aProbeStillQueuedAtCloseIsAnswered() {
        let pool = RedisPool(configuration: RedisConfiguration(port: 1), clock: .continuous)
        let answers = Locked<[Result<Lease, RedisError>]>([])
        // Queued as the prober queues it, before the connector thread has taken it.
        pool.state.withValue { $0.jobs.append(.probe { result in answers.withValue { $0.append(result) } }) }
        pool.close()
        let answered = answers.withValue { $0 }
        #expect(answered.count == 1)
        if case .failure(.clientClosed)? = answered.first {} else {
            Issue.record("the probe was answered \(String(describing: answered.first))")
        }
    }
}
