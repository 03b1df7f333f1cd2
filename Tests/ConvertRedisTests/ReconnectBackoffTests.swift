import ConvertRedis
import ConvertTesting
import Testing

/// The reconnect backoff runs on the client's injected clock: a closed port, a manual clock.
@Suite(.timeLimit(.minutes(1))) struct ReconnectBackoffTests {
    @Test func probesWaitADoublingCappedBackoffOnTheInjectedClockAndCallsNeverWait() async throws {
        let clock = ManualClock()
        let port = try freeLoopbackPort()
        let client = RedisClient(configuration: RedisConfiguration(port: port, connectTimeout: .seconds(1),
                                                                   reconnectBackoffInitial: .seconds(10), reconnectBackoffMax: .seconds(40)),
                                 clock: clock)
        defer { client.close() }

        /// The failure of one call: the connect's own error (`nil`) or a refusal naming the wait.
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
            #expect(reason.contains("ECONNREFUSED"), "the refusal names the last attempt's cause: \(reason)")
            return reason
        }

        #expect(try await attempt() == nil, "the first call gets the connect's error")
        #expect(!client.isAvailable)
        for wait in [10, 20, 40, 40] {
            let refusal = try #require(try await attempt(), "a call within the backoff fails without connecting")
            #expect(refusal.contains("next connect attempt in \(wait * 1_000) ms"), "\(refusal)")
            try await clock.waitForSleepers()
            #expect(clock.deadlines.count == 1, "one background probe waits")
            clock.advance(by: .seconds(wait) - .milliseconds(1))
            #expect(try await attempt()?.contains("in 1 ms") == true, "1 ms before the backoff ends it still holds")
            clock.advance(by: .milliseconds(1))
            // The probe runs in the background; calls keep failing at once meanwhile, then name
            // the next, doubled wait.
            let next = min(wait * 2, 40) * 1_000
            #expect(await eventually { (try? client.ping()) == nil && self.refusal(client)?.contains("in \(next) ms") == true },
                    "the probe failed and the next one waits \(next) ms")
        }
    }

    /// The message a call fails with during the backoff.
    private func refusal(_ client: RedisClient) -> String? {
        do {
            try client.ping()
            return nil
        } catch {
            if case .connectionFailed(let reason) = error { return reason }
            return nil
        }
    }
}
