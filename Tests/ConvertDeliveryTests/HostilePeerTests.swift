import ConvertSwiftSDK
import ConvertTesting
import ConvertTransport
import ConvertURLSessionTransport
import Foundation
import Testing

/// A GET as the config loader sends it: with the SDK key's secret.
private func configRequest(_ url: String) throws -> HTTPRequest {
    var request = HTTPRequest(method: .get, url: try #require(URL(string: url)), timeout: .seconds(5))
    request.setHeader("Authorization", "Bearer top-secret")
    return request
}

private func failure(_ body: () async throws -> HTTPResponse) async -> TransportError? {
    do {
        _ = try await body()
        return nil
    } catch {
        return error as? TransportError
    }
}

@Suite(.serialized) struct HostilePeerTests {
    @Test func aRedirectToAnotherOriginReachesNothingAndIsReturnedAsIs() async throws {
        let elsewhere = try LoopbackHTTPServer { _ in .respond(status: 200, body: Data(#"{"stolen":true}"#.utf8)) }
        let endpoint = try LoopbackHTTPServer { _ in
            .respond(status: 302, headers: ["Location": elsewhere.baseURL + "/config/stolen"])
        }
        let response = try await URLSessionTransport().send(try configRequest(endpoint.baseURL + "/config/key"))
        #expect(response.status == 302)
        #expect(elsewhere.requests.isEmpty, "another port is another origin: it must not see the request or its secret")
    }

    @Test func aConfigEndpointRedirectingElsewhereNeverHandsOverTheSecretOrAConfig() async throws {
        let elsewhere = try LoopbackHTTPServer { _ in .respond(status: 200, body: try! Fixtures.data(.cdnConfigBaseline)) }
        let endpoint = try LoopbackHTTPServer { request in
            request.method == "GET" ? .respond(status: 302, headers: ["Location": elsewhere.baseURL + "/api/v1/config/x"])
                : .respond(status: 200)
        }
        var configuration = loopbackConfiguration(endpoint, persistence: .memory)
        configuration.sdkKeySecret = "top-secret"
        let sdk = ConvertSwiftSDK(configuration: configuration, logSink: RecordingLogSink())
        await #expect(throws: (any Error).self) { try await sdk.ready(timeout: .milliseconds(800)) }
        // On a busy machine the fetch may not have begun within the wait: the verdict comes after it.
        try await eventually("the SDK asked its endpoint", timeout: .seconds(10)) { !endpoint.requests.isEmpty }
        try await Task.sleep(for: .milliseconds(200))
        #expect(sdk.config == nil, "the redirect's body is not a config")
        #expect(elsewhere.requests.isEmpty)
    }

    @Test func aRedirectWithinTheOriginIsFollowed() async throws {
        let server = try LoopbackHTTPServer { request in
            request.path.hasSuffix("/old") ? .respond(status: 301, headers: ["Location": "/new"])
                : .respond(status: 200, body: Data("moved".utf8))
        }
        let response = try await URLSessionTransport().send(try configRequest(server.baseURL + "/old"))
        #expect(response.status == 200 && response.body == Data("moved".utf8))
        #expect(server.requests.last?.header("Authorization") == "Bearer top-secret", "the same server keeps its header")
    }

    @Test func aRequestCancelledAtAnyMomentOfARedirectOrAResponseEndsWithoutStoppingTheProcess() async throws {
        // FoundationNetworking stops the process when a task is cancelled while it waits for the
        // delegate's answer to a redirect or a response head; requests cancelled at random moments
        // of both must only fail.
        let elsewhere = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let server = try LoopbackHTTPServer { request in
            switch request.path {
            case "/hop": .respond(status: 302, headers: ["Location": "/end"])
            case "/away": .respond(status: 302, headers: ["Location": elsewhere.baseURL + "/end"])
            default: .respond(status: 200, body: Data(repeating: 0x61, count: 4_096))
            }
        }
        let transport = URLSessionTransport()
        var generator = SeededGenerator(seed: 7)
        var answered = 0
        for round in 0..<400 {
            let path = ["/hop", "/away", "/end"][round % 3]
            let request = try configRequest(server.baseURL + path)
            let sending = Task { try await transport.send(request) }
            try await Task.sleep(for: .microseconds(Int.random(in: 0...2_000, using: &generator)))
            sending.cancel()
            if (try? await sending.value) != nil { answered += 1 }
        }
        let response = try await transport.send(try configRequest(server.baseURL + "/hop"))
        #expect(response.status == 200, "the transport still answers after \(400 - answered) cancelled requests")
        #expect(elsewhere.requests.isEmpty)
    }

    @Test func anAnnouncedBodyOverTheLimitFailsBeforeItArrives() async throws {
        // 2 GiB announced, 64 KiB sent, then the connection closes: only a client that judges the
        // head reports the body as too large (one that waits for the body sees a broken transfer).
        let server = try LoopbackHTTPServer { _ in
            .stream(status: 200, headers: ["Content-Length": "2147483648"], chunk: Data(count: 64 * 1024), repeats: 1,
                    chunked: false)
        }
        let error = await failure { try await URLSessionTransport(maximumBodyBytes: 1 << 20).send(try configRequest(server.baseURL)) }
        #expect(error == .bodyTooLarge(limit: 1 << 20))
    }

    @Test func anEndlessChunkedBodyIsCutAtTheLimit() async throws {
        // 256 MiB, chunked, no length announced: the limit is counted as the chunks arrive.
        let server = try LoopbackHTTPServer { _ in
            .stream(status: 200, headers: [:], chunk: Data(repeating: 0x61, count: 64 * 1024), repeats: 4_096, chunked: true)
        }
        let error = await failure { try await URLSessionTransport(maximumBodyBytes: 1 << 20).send(try configRequest(server.baseURL)) }
        #expect(error == .bodyTooLarge(limit: 1 << 20))
    }

    @Test func aCompressedBodyCountsWhatItDecodesTo() async throws {
        // 4 KB on the wire, 4 MiB decoded.
        let bomb = try Data(contentsOf: try #require(Bundle.module.url(forResource: "Resources/zeros-4MiB", withExtension: "gz")))
        let server = try LoopbackHTTPServer { _ in .respond(status: 200, headers: ["Content-Encoding": "gzip"], body: bomb) }
        let transport = URLSessionTransport(maximumBodyBytes: 1 << 20)
        let error = await failure { try await transport.send(try configRequest(server.baseURL)) }
        #expect(error == .bodyTooLarge(limit: 1 << 20))
        // Within the limit it decodes as usual.
        let roomy = try await URLSessionTransport(maximumBodyBytes: 8 << 20).send(try configRequest(server.baseURL))
        #expect(roomy.body.count == 4 << 20)
    }
}
