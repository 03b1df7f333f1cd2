@testable import ConvertRedis
import Testing

/// A call whose time ran out before it was sent (its caller waited for a thread): it is still
/// sent, so a quick reply answers it; without one it ends at once, saying it was late rather
/// than giving a negative budget, and a late caller is no outage.
@Suite(.enabled(if: RedisServer.isAvailable, "redis-server is not installed (looked in PATH, /usr/bin, /usr/sbin)"))
struct RedisLateCallTests {
    @Test func aCallWhoseTimeRanOutBeforeItWasSentSaysSo() async throws {
        let server = try await RedisServer.started()
        var configuration = server.configuration(keyPrefix: "late:")
        configuration.poolSize = 1
        let client = RedisClient(configuration: configuration)
        defer { client.close() }
        try await client.ping()
        let late = ContinuousClock.now - .milliseconds(20)
        // Answered at once: the late call still gets its reply.
        let answered = try await client.perform(.commands([["INCR", "late:count"]]), count: 1, slow: false, deadline: late)
        #expect(answered == [.integer(1)])

        // A client per path, each with its connection open: a late call's timeout closes it.
        let clients = [RedisClient(configuration: configuration), RedisClient(configuration: configuration)]
        defer { clients.forEach { $0.close() } }
        for other in clients { try await other.ping() }
        server.pause()
        defer { server.resume() }
        for (blocking, client) in zip([false, true], clients) {
            let error: RedisError?
            do {
                if blocking {
                    _ = try client.perform(.commands([["INCR", "late:count"]]), count: 1, deadline: .now - .milliseconds(20))
                } else {
                    _ = try await client.perform(.commands([["INCR", "late:count"]]), count: 1, slow: false,
                                                 deadline: .now - .milliseconds(20))
                }
                error = nil
            } catch let failure {
                error = failure
            }
            guard case .timeout(let reason)? = error else {
                Issue.record("a late \(blocking ? "blocking" : "async") call to a paused server ended \(String(describing: error))")
                continue
            }
            #expect(reason.contains("ran out") && reason.contains("ms before it was sent") && !reason.contains("-"), "\(reason)")
        }
        #expect(clients.allSatisfy { $0.isAvailable }, "a late caller is no outage")
    }
}
