import ConvertConfigLoader
import ConvertQueue
import ConvertSwiftSDK
import ConvertTesting
import ConvertTransport
import ConvertURLSessionTransport
import Foundation
import Testing

private let secret = "top-secret-value"
private let token = "debug-token-value"

/// Everything a value prints: its description, its debug description and `dump`.
private func printed(_ value: Any) -> String {
    var dumped = ""
    dump(value, to: &dumped)
    return "\(value)\n\(String(reflecting: value))\n\(dumped)"
}

@Suite struct SecretsAndIdsTests {
    @Test func noDescriptionOrDumpPrintsTheSecretOrTheDebugToken() async throws {
        let configuration = ConvertConfiguration(sdkKey: "10035569/10034190", sdkKeySecret: secret, debugToken: token,
                                                 persistence: .memory)
        let settings = RemoteConfigSource.Settings(sdkKey: "10035569/10034190", sdkKeySecret: secret, debugToken: token)
        let source = RemoteConfigSource(settings: settings, transport: StubTransport { _ in HTTPResponse(status: 500) },
                                        cache: nil)
        let sdk = ConvertSwiftSDK(configuration: configuration, logSink: RecordingLogSink())
        var request = HTTPRequest(method: .get, url: try #require(URL(string: "https://cdn.example/config")))
        request.setHeader("Authorization", "Bearer \(secret)")
        for (name, value) in [("configuration", configuration), ("settings", settings), ("source", source), ("sdk", sdk),
                              ("request", request)] as [(String, Any)] {
            let text = printed(value)
            #expect(!text.contains(secret), "\(name) prints the secret:\n\(text)")
            #expect(!text.contains(token), "\(name) prints the debug token:\n\(text)")
        }
        #expect(printed(request).contains("<redacted>"))
        #expect(printed(configuration).contains("10035569/10034190"), "what is not secret is still shown")
        _ = await sdk.shutdown(timeout: .seconds(5))
    }

    @Test func aProjectIdThatIsNotAnIdSendsTrackingNowhere() async throws {
        let thief = try LoopbackHTTPServer { _ in .respond(status: 200) }
        let port = try #require(URL(string: thief.baseURL)?.port)
        let hostile = "127.0.0.1:\(port)/stolen?"
        let endpoint = TrackingEndpoint(template: "http://[project_id].metrics.invalid/v1", sdkKey: "k",
                                        policy: EndpointPolicy(allowsInsecureHTTP: true))
        #expect(throws: TransportError.self) { try endpoint.url(projectId: hostile) }
        #expect(try endpoint.url(projectId: "10034190").host == "10034190.metrics.invalid")

        let queue = TrackingQueue(transport: URLSessionTransport(), endpoint: endpoint,
                                  options: TrackingQueueOptions(batchSize: 1, releaseInterval: .milliseconds(10)))
        queue.enqueue(TrackingEvent(accountId: "1", projectId: hostile, visitorId: "v", segments: nil,
                                    payload: .conversion(goalId: "g", goalData: nil, bucketingData: nil)))
        #expect(await queue.flush(timeout: .patience), "the event is settled (dropped) before anything is checked")
        #expect(thief.requests.isEmpty, "the config's project id must not pick the tracking host")
        #expect(queue.counters.dropped == 1)
        _ = await queue.shutdown(timeout: .seconds(5))
    }
}
