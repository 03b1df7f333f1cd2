import ConvertAsyncHTTPClient
import ConvertTesting
import ConvertTransport
import Foundation
import Testing

@Suite struct AsyncHTTPClientTransportTests {
    /// Runs `body` with a transport, shutting it down after, whatever `body` did.
    private func withTransport(maximumBodyBytes: Int = 1 << 20, postAnswerDeadline: Duration = .seconds(2),
                               _ body: (AsyncHTTPClientTransport) async throws -> Void) async throws {
        let transport = AsyncHTTPClientTransport(maximumBodyBytes: maximumBodyBytes, postAnswerDeadline: postAnswerDeadline)
        let outcome: Result<Void, any Error>
        do {
            try await body(transport)
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        try await transport.shutdown()
        try outcome.get()
    }

    private func failure(_ send: () async throws -> HTTPResponse) async -> TransportError? {
        do {
            _ = try await send()
            return nil
        } catch {
            return error as? TransportError
        }
    }

    private func get(_ url: String) throws -> HTTPRequest {
        HTTPRequest(method: .get, url: try #require(URL(string: url)), timeout: .seconds(10))
    }

    @Test func keepsTheTransportContract() async throws {
        try await withTransport { try await HTTPTransportContract.verify($0) }
    }

    @Test func aRedirectComesBackAsItIsAndTheOtherHostSeesNothing() async throws {
        let elsewhere = try LoopbackHTTPServer { _ in .respond(status: 200, body: Data("{}".utf8)) }
        defer { elsewhere.stop() }
        let server = try LoopbackHTTPServer { _ in .respond(status: 302, headers: ["Location": elsewhere.baseURL + "/config"]) }
        defer { server.stop() }
        try await withTransport { transport in
            var request = try get(server.baseURL + "/config")
            request.headers = [("Authorization", "Bearer secret")]
            let response = try await transport.send(request)
            #expect(response.status == 302)
            #expect(response.header("location") == elsewhere.baseURL + "/config")
            #expect(elsewhere.requests.isEmpty)
        }
    }

    @Test func anAnnouncedBodyOverTheLimitFailsBeforeItArrives() async throws {
        let server = try LoopbackHTTPServer { _ in
            .stream(status: 200, headers: ["Content-Length": "2147483648"], chunk: Data(count: 64 * 1024), repeats: 1, chunked: false)
        }
        defer { server.stop() }
        try await withTransport { transport in
            let error = await failure { try await transport.send(try get(server.baseURL)) }
            #expect(error == .bodyTooLarge(limit: 1 << 20))
        }
    }

    @Test func anEndlessChunkedBodyIsCutAtTheLimit() async throws {
        let server = try LoopbackHTTPServer { _ in
            .stream(status: 200, headers: [:], chunk: Data(repeating: 0x61, count: 64 * 1024), repeats: 4_096, chunked: true)
        }
        defer { server.stop() }
        try await withTransport { transport in
            let error = await failure { try await transport.send(try get(server.baseURL)) }
            #expect(error == .bodyTooLarge(limit: 1 << 20))
            // Within the limit a body arrives whole.
            let small = try LoopbackHTTPServer { _ in
                .stream(status: 200, headers: [:], chunk: Data(repeating: 0x62, count: 64 * 1024), repeats: 4, chunked: true)
            }
            defer { small.stop() }
            #expect(try await transport.send(try get(small.baseURL)).body == Data(repeating: 0x62, count: 256 * 1024))
        }
    }

    @Test func anUnansweredPostFailsAfterTheAnswerDeadlineAndIsSentOnce() async throws {
        let server = try LoopbackHTTPServer { _ in .delay(.seconds(20), then: .respond(status: 200)) }
        defer { server.stop() }
        try await withTransport(postAnswerDeadline: .milliseconds(300)) { transport in
            let start = ContinuousClock.now
            let error = await failure {
                try await transport.send(HTTPRequest(method: .post, url: try #require(URL(string: server.baseURL + "/track")),
                                                     body: Data("[]".utf8), timeout: .seconds(15)))
            }
            let waited = ContinuousClock.now - start
            #expect(error == .timedOut)
            #expect(waited >= .milliseconds(250) && waited < .seconds(5), "failed after \(waited)")
            #expect(server.requests.count == 1)
        }
    }

    @Test func aConfigGetWaitsItsOwnTimeoutNotThePostDeadline() async throws {
        let server = try LoopbackHTTPServer { _ in .delay(.seconds(1), then: .respond(status: 200, body: Data("{}".utf8))) }
        defer { server.stop() }
        try await withTransport(postAnswerDeadline: .milliseconds(300)) { transport in
            let response = try await transport.send(try get(server.baseURL + "/config"))
            #expect(response.status == 200 && response.body == Data("{}".utf8))
        }
    }
}
