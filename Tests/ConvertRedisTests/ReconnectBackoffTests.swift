import ConvertRedis
import ConvertTesting
import Testing

/// The reconnect backoff runs on the client's injected clock: a closed port, a manual clock.
@Suite(.timeLimit(.minutes(1))) struct ReconnectBackoffTests {
    @Test func connectAttemptsWaitADoublingCappedBackoffOnTheInjectedClock() async throws {
        let clock = ManualClock()
        let port = try freeLoopbackPort()
        let client = RedisClient(configuration: RedisConfiguration(port: port, connectTimeout: .seconds(1),
                                                                   reconnectBackoffInitial: .seconds(10), reconnectBackoffMax: .seconds(40)),
                                 clock: clock)
        defer { client.close() }

        /// The failure of one call: a connect attempt (`nil`) or a refusal naming the wait.
        func attempt() async throws -> String? {
            let error = await redisError { try await client.ping() }
            guard case .connectionFailed(let reason)? = error else {
                Issue.record("expected a connection failure, got \(String(describing: error))")
                throw CancellationError()
            }
            guard reason.contains("next connect attempt in") else {
                #expect(reason.contains("ECONNREFUSED"), "\(reason)")
                return nil
            }
            return reason
        }

        #expect(try await attempt() == nil, "the first call connects")
        for wait in [10, 20, 40, 40] {
            let refusal = try #require(try await attempt(), "a call within the backoff fails without connecting")
            #expect(refusal.contains("next connect attempt in \(wait * 1_000) ms"), "\(refusal)")
            clock.advance(by: .seconds(wait) - .milliseconds(1))
            #expect(try await attempt()?.contains("in 1 ms") == true, "1 ms before the backoff ends it still holds")
            clock.advance(by: .milliseconds(1))
            #expect(try await attempt() == nil, "once the clock passes the backoff one call connects again")
        }
    }
}
