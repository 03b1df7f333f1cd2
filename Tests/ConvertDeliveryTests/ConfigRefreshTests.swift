import ConvertConfigLoader
import ConvertMemory
import ConvertSwiftSDK
import ConvertSynchronization
import ConvertTesting
import ConvertTransport
import ConvertURLSessionTransport
import Foundation
import Testing

// A real loopback server answers; the refresh schedule runs on a `ManualClock`, so "60 s later"
// happens when the test says and the only real waiting is for the wire.

private let lastModified = "Wed, 21 Oct 2015 07:28:00 GMT"

private func remoteSource(_ server: LoopbackHTTPServer, key: String = "k", clock: ManualClock,
                          logs: RecordingLogSink = RecordingLogSink(),
                          random: (@Sendable () -> Double)? = { 0.5 }) -> RemoteConfigSource {
    let settings = RemoteConfigSource.Settings(sdkKey: key, endpoint: server.baseURL, refreshInterval: .seconds(60),
                                               requestTimeout: .seconds(5),
                                               retry: RetryPolicy(initial: .seconds(50), maximum: .seconds(50)),
                                               policy: EndpointPolicy(allowsInsecureHTTP: true))
    let log = SDKLog(sink: logs, minimum: .debug)
    if let random {
        return RemoteConfigSource(settings: settings, transport: URLSessionTransport(), cache: MemoryByteStore(), log: log,
                                  clock: clock, random: random)
    }
    return RemoteConfigSource(settings: settings, transport: URLSessionTransport(), cache: MemoryByteStore(), log: log,
                              clock: clock)
}

private func remoteSDK(_ source: RemoteConfigSource, clock: ManualClock, logs: RecordingLogSink = RecordingLogSink()) -> ConvertSwiftSDK {
    var configuration = ConvertConfiguration(sdkKey: source.settings.sdkKey, dataRefreshIntervalMs: 60_000, persistence: .memory)
    configuration.logLevel = .debug
    return ConvertSwiftSDK(configuration: configuration, ports: ConvertPorts(
        configSource: source, visitorStore: MemoryVisitorDataStore(), visitorIdStore: MemoryVisitorIdStore(),
        trackingSink: RecordingTrackingSink(), logSink: logs, sleepClock: clock))
}

@Suite(.serialized) struct ConfigRefreshTests {
    @Test func bothValidatorsAreSentVerbatimOnceTheServerGaveThem() async throws {
        let config = try Fixtures.data(.cdnConfigBaseline)
        let served = Locked(0)
        let server = try LoopbackHTTPServer { request in
            served.withValue { $0 += 1 }
            switch served.value {
            case 1: return .respond(status: 200, headers: ["Last-Modified": lastModified], body: config)
            case 2: return .respond(status: 200, headers: ["ETag": "W/\"v2\"", "Last-Modified": "Thu, 22 Oct 2015 08:00:00 GMT"],
                                    body: config)
            default: return .respond(status: 304)
            }
        }
        let clock = ManualClock()
        let source = remoteSource(server, clock: clock)
        let delivered = Locked(0)
        let run = Task { try await source.run(deliver: { _ in delivered.withValue { $0 += 1 } }, report: { _ in }) }
        defer { run.cancel() }
        try await eventually("the first config") { delivered.value == 1 }
        #expect(server.requests[0].header("If-None-Match") == nil && server.requests[0].header("If-Modified-Since") == nil)

        #expect(await source.refresh() == .updated)
        #expect(server.requests[1].header("If-Modified-Since") == lastModified, "Last-Modified alone is echoed")
        #expect(server.requests[1].header("If-None-Match") == nil, "no ETag came, so none is sent")

        #expect(await source.refresh() == .unchanged)
        #expect(server.requests[2].header("If-None-Match") == "W/\"v2\"", "the newest validators, verbatim")
        #expect(server.requests[2].header("If-Modified-Since") == "Thu, 22 Oct 2015 08:00:00 GMT")
        #expect(delivered.value == 2, "a 304 delivers nothing")
    }

    @Test func aNotModifiedAnswerResetsTheAgeWithoutDecodingOrAnnouncing() async throws {
        let config = try Fixtures.data(.cdnConfigBaseline)
        let mode = Locked("serve")
        let server = try LoopbackHTTPServer { _ in
            switch mode.value {
            case "serve": return .respond(status: 200, headers: ["ETag": "\"v1\"", "Last-Modified": lastModified], body: config)
            // A body that is no config: decoding it would count a failure.
            case "same": return .respond(status: 304, body: Data("{ not a config".utf8))
            default: return .respond(status: 500)
            }
        }
        let clock = ManualClock()
        let logs = RecordingLogSink()
        let sdk = remoteSDK(remoteSource(server, clock: clock, logs: logs), clock: clock, logs: logs)
        let recorder = await EventRecorder(sdk, events: [.configUpdated])
        try await sdk.ready()
        try await clock.waitForSleepers()
        #expect(clock.deadlines == [.seconds(60)])

        mode.set("fail")
        clock.advance(to: .seconds(60))
        try await eventually("the failed refresh") { sdk.configFetchFailures == 1 }
        try await clock.waitForSleepers()
        #expect(clock.deadlines == [.milliseconds(97_500)], "50 s backoff, jittered to 37.5 s by the fixed random source")
        clock.advance(to: .milliseconds(97_500))
        try await eventually("the second failure") { sdk.configFetchFailures == 2 }
        try await clock.waitForSleepers()
        clock.advance(to: .seconds(130))
        guard case .stale(let age, let cause) = sdk.status else { Issue.record("stale expected: \(sdk.status)"); return }
        #expect(age == .seconds(130))
        #expect(cause.contains("HTTP 500"))

        mode.set("same")
        clock.advance(to: .seconds(135))
        try await eventually("the 304") { server.requests.count == 4 }
        try await eventually("the age restarts at the 304") { sdk.status == .ready(configAge: .zero) }
        #expect(server.requests[3].header("If-None-Match") == "\"v1\"")
        #expect(server.requests[3].header("If-Modified-Since") == lastModified)
        clock.advance(by: .seconds(5))
        #expect(sdk.status == .ready(configAge: .seconds(5)))
        #expect(sdk.configFetchFailures == 2, "the 304's body was never decoded")
        #expect(!logs.contains("unusable") && !logs.contains("rejected"))
        #expect(await recorder.settled(.configUpdated).isEmpty)
        #expect(await sdk.refreshConfig() == .unchanged)
        await sdk.shutdown(timeout: .seconds(1))
    }

    @Test func failuresAreReturnedAndTheConfigInHandStands() async throws {
        let config = try Fixtures.data(.cdnConfigBaseline)
        let failing = Locked(false)
        let server = try LoopbackHTTPServer { _ in failing.value ? .respond(status: 503) : configReply(config) }
        let clock = ManualClock()
        let sdk = remoteSDK(remoteSource(server, clock: clock), clock: clock)
        try await sdk.ready()
        failing.set(true)
        guard case .failed(let reason) = await sdk.refreshConfig() else { Issue.record("a failure expected"); return }
        #expect(reason.contains("HTTP 503"))
        #expect(sdk.lastConfigFailure == reason)
        #expect(sdk.configFetchFailures == 1)
        #expect(sdk.config?.accountId == "10035569", "the installed config stands")
        failing.set(false)
        #expect(await sdk.refreshConfig() == .unchanged, "the same bytes again install nothing new")
        #expect(sdk.lastConfigFailure == nil)

        await sdk.shutdown(timeout: .seconds(1))
        try await eventually("the loop ended") { if case .failed = await sdk.refreshConfig() { true } else { false } }

        let direct = ConvertSwiftSDK(configData: config, logSink: SilentLogSink())
        try await direct.ready()
        guard case .failed = await direct.refreshConfig() else { Issue.record("direct data cannot refresh"); return }
    }

    @Test func aSlowAnswerIsSharedByTheScheduledFetchAndConcurrentRefreshes() async throws {
        let config = try Fixtures.data(.cdnConfigBaseline)
        let updated = try Fixtures.baselineReallocated([30, 70])
        let server = try LoopbackHTTPServer { _ in configReply(config, etag: "\"v1\"") }
        let clock = ManualClock()
        let sdk = remoteSDK(remoteSource(server, clock: clock), clock: clock)
        let recorder = await EventRecorder(sdk, events: [.configUpdated])
        try await sdk.ready()
        try await clock.waitForSleepers()

        server.setHandler { _ in .delay(.milliseconds(600), then: configReply(updated, etag: "\"v2\"")) }
        clock.advance(to: .seconds(60))
        try await eventually("the scheduled fetch on the wire") { server.requests.count == 2 }
        async let first = sdk.refreshConfig()
        async let second = sdk.refreshConfig()
        let results = await [first, second]
        #expect(results == [.updated, .updated], "both joined the fetch under way and saw its config installed")
        #expect(server.requests.count == 2, "one request for the loop and both refreshes")
        #expect(try await recorder.wait(for: .configUpdated).count == 1)
        #expect(sdk.config?.experiences[0].variations[0].trafficAllocation == 30)

        server.setHandler { _ in .delay(.milliseconds(400), then: .respond(status: 304)) }
        async let a = sdk.refreshConfig()
        async let b = sdk.refreshConfig()
        async let c = sdk.refreshConfig()
        #expect(await [a, b, c] == [.unchanged, .unchanged, .unchanged])
        #expect(server.requests.count == 3, "three refreshes together, one request")
        #expect(server.requests[2].header("If-None-Match") == "\"v2\"")
        #expect(await recorder.settled(.configUpdated).count == 1)
        await sdk.shutdown(timeout: .seconds(1))
    }

    @Test func twoSDKsStartedTogetherPollAtDifferentMoments() async throws {
        let config = try Fixtures.data(.cdnConfigBaseline)
        let server = try LoopbackHTTPServer { _ in configReply(config, etag: "\"v1\"") }
        let clock = ManualClock()
        // The default random source: nothing is fixed but the clock.
        let one = remoteSDK(remoteSource(server, key: "a", clock: clock, random: nil), clock: clock)
        let two = remoteSDK(remoteSource(server, key: "b", clock: clock, random: nil), clock: clock)
        try await one.ready()
        try await two.ready()
        try await clock.waitForSleepers(2)
        let deadlines = clock.deadlines
        #expect(deadlines.count == 2 && deadlines[0] < deadlines[1], "\(deadlines)")
        #expect(deadlines.allSatisfy { (.seconds(54) ... .seconds(66)).contains($0) }, "60 s ± 10%: \(deadlines)")

        func polls(_ key: String) -> Int { server.requests.filter { $0.path == "/config/\(key)" }.count }
        clock.advance(to: deadlines[0])
        try await eventually("the earlier poll") { polls("a") + polls("b") == 3 }
        await letTasksRun()
        #expect(polls("a") + polls("b") == 3, "the other instance still waits")
        let early = polls("a") == 2 ? "a" : "b"
        clock.advance(to: deadlines[1])
        try await eventually("the later poll") { polls("a") == 2 && polls("b") == 2 }
        #expect(early == "a" || early == "b")
        await one.shutdown(timeout: .seconds(1))
        await two.shutdown(timeout: .seconds(1))
    }

    @Test func theInjectedRandomSourceFixesEachWait() async throws {
        let config = try Fixtures.data(.cdnConfigBaseline)
        let server = try LoopbackHTTPServer { _ in configReply(config, etag: "\"v1\"") }
        let clock = ManualClock()
        let low = remoteSDK(remoteSource(server, key: "low", clock: clock, random: { 0 }), clock: clock)
        let high = remoteSDK(remoteSource(server, key: "high", clock: clock, random: { 1 }), clock: clock)
        try await low.ready()
        try await high.ready()
        try await clock.waitForSleepers(2)
        #expect(clock.deadlines == [.seconds(54), .seconds(66)], "the first wait after start is jittered too")
        clock.advance(to: .seconds(54))
        try await eventually("the low instance's poll") { server.requests.filter { $0.path == "/config/low" }.count == 2 }
        try await clock.waitForSleepers(2)
        #expect(clock.deadlines == [.seconds(66), .seconds(108)])
        #expect(server.requests.filter { $0.path == "/config/high" }.count == 1)
        await low.shutdown(timeout: .seconds(1))
        await high.shutdown(timeout: .seconds(1))
    }
}
