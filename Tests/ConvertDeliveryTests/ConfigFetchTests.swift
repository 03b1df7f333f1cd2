import ConvertConfigLoader
import ConvertFileStorage
import ConvertMemory
import ConvertSwiftSDK
import ConvertTesting
import ConvertTransport
import ConvertURLSessionTransport
import ConvertSynchronization
import Foundation
import Testing

@Suite(.serialized) struct ConfigFetchTests {
    @Test func requestOnTheWireAndVerbatimCache() async throws {
        let config = try Fixtures.data(.cdnConfigBaseline)
        let server = try LoopbackHTTPServer { _ in configReply(config, etag: "\"v1\"") }
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = loopbackConfiguration(server, directory: directory)
        configuration.sdkKeySecret = "s3cret-value"
        configuration.environment = "production"
        configuration.networkCacheLevel = .low
        configuration.debugToken = "dbg-token"
        let logs = RecordingLogSink()
        let sdk = ConvertSwiftSDK(configuration: configuration, logSink: logs)
        try await sdk.ready(timeout: .patience)
        let request = try #require(server.requests.first)
        #expect(request.method == "GET")
        #expect(request.path == "/api/v1/config/10035569/10034190")
        #expect(request.query.map(\.name) == ["environment", "_conv_low_cache", "debug_token"])
        #expect(request.query.map(\.value) == ["production", "1", "dbg-token"])
        #expect(request.header("Authorization") == "Bearer s3cret-value")
        #expect(request.header("User-Agent") == "ConvertAgent/\(ConvertAgent.version)")
        let cached = try Data(contentsOf: directory.appendingPathComponent("config-10035569_10034190-production.json"))
        #expect(cached == config, "the response bytes are cached verbatim")
        #expect(FileStorage.permissions(of: directory.appendingPathComponent("config-10035569_10034190-production.json")) == 0o600)
        #expect(!logs.messages.joined().contains("s3cret-value"))
        #expect(!logs.messages.joined().contains("dbg-token"))
    }

    @Test func plainQueryWithoutOptionalSettings() async throws {
        let server = try LoopbackHTTPServer { _ in configReply((try? Fixtures.data(.staticConfig)) ?? Data()) }
        let sdk = ConvertSwiftSDK(configuration: loopbackConfiguration(server, persistence: .memory), logSink: RecordingLogSink())
        try await sdk.ready(timeout: .patience)
        let request = try #require(server.requests.first)
        #expect(request.query.isEmpty)
        #expect(request.header("Authorization") == nil)
    }

    private func source(_ server: LoopbackHTTPServer, cache: MemoryByteStore, logs: RecordingLogSink,
                        transport: URLSessionTransport = URLSessionTransport(), timeout: Duration = .seconds(2),
                        refresh: Duration = .milliseconds(100)) -> RemoteConfigSource {
        RemoteConfigSource(settings: .init(sdkKey: "k", endpoint: server.baseURL, refreshInterval: refresh, requestTimeout: timeout,
                                           retry: RetryPolicy(initial: .milliseconds(20), maximum: .milliseconds(100)),
                                           policy: EndpointPolicy(allowsInsecureHTTP: true)),
                           transport: transport, cache: cache, log: SDKLog(sink: logs, minimum: .debug))
    }

    @Test func etagRevalidationAnd304KeepTheConfigQuietly() async throws {
        let config = try Fixtures.data(.cdnConfigBaseline)
        let server = try LoopbackHTTPServer { request in
            request.header("If-None-Match") == "\"v1\"" ? .respond(status: 304) : configReply(config, etag: "\"v1\"")
        }
        let logs = RecordingLogSink()
        let harness = TestSDK(data: nil)
        let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "k"), ports: ConvertPorts(
            configSource: source(server, cache: MemoryByteStore(), logs: logs), visitorStore: harness.store,
            visitorIdStore: harness.idStore, trackingSink: harness.sink, logSink: logs))
        let recorder = await EventRecorder(sdk, events: [.ready, .configUpdated])
        try await sdk.ready(timeout: .patience)
        try await eventually("three revalidations") { server.requests.count >= 4 }
        #expect(server.requests.dropFirst().allSatisfy { $0.header("If-None-Match") == "\"v1\"" })
        #expect(await recorder.settled(.configUpdated).isEmpty)
        #expect(sdk.config?.accountId == "10035569")
    }

    @Test func serverErrorIsNotCachedAndIsRetried() async throws {
        let config = try Fixtures.data(.staticConfig)
        let calls = Counter()
        let server = try LoopbackHTTPServer { _ in
            calls.increment()
            return calls.value <= 2 ? .respond(status: 500, body: Data("{\"account_id\":\"x\",\"project\":{\"id\":\"y\"}}".utf8))
                : configReply(config)
        }
        let cache = MemoryByteStore()
        let logs = RecordingLogSink()
        let delivered = Locked<[ConfigDocument]>([])
        let task = Task { try await source(server, cache: cache, logs: logs).run { document in
            delivered.withValue { $0.append(document) }
        } }
        try await eventually("a successful fetch after two 500s") { delivered.value.count == 1 }
        task.cancel()
        #expect(calls.value >= 3)
        #expect(try cache.read("config-k-default.json") == config)
        #expect(logs.contains("HTTP 500"))
        #expect(delivered.value.first?.origin == .network)
    }

    @Test func cacheFirstStartThenLive() async throws {
        let cached = try Fixtures.data(.staticConfig)
        let live = try Fixtures.data(.cdnConfigBaseline)
        // The network answers only once ready() has returned, so the cache must have served it.
        // A flag, not a semaphore: every request waits for it, a retried one included.
        let networkMayAnswer = Locked(false)
        let server = try LoopbackHTTPServer { _ in
            while !networkMayAnswer.value { Thread.sleep(forTimeInterval: 0.005) }
            return configReply(live)
        }
        let cache = MemoryByteStore(["config-k-default.json": cached])
        let logs = RecordingLogSink()
        let harness = TestSDK(data: nil)
        let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "k"), ports: ConvertPorts(
            configSource: source(server, cache: cache, logs: logs, timeout: .patience, refresh: .seconds(3600)),
            visitorStore: harness.store,
            visitorIdStore: harness.idStore, trackingSink: harness.sink, logSink: logs))
        let recorder = await EventRecorder(sdk, events: [.ready, .configUpdated])
        try await sdk.ready(timeout: .patience)
        #expect(sdk.config?.experiences.count == 2, "a cached config makes ready() resolve before the network")
        networkMayAnswer.set(true)
        try await recorder.wait(for: .configUpdated, timeout: .patience)
        #expect(sdk.config?.experiences.count == 4)
        #expect(try cache.read("config-k-default.json") == live)
    }

    @Test func corruptCacheIsDeletedAndTheNetworkServes() async throws {
        let live = try Fixtures.data(.cdnConfigBaseline)
        let server = try LoopbackHTTPServer { _ in configReply(live) }
        let cache = MemoryByteStore(["config-k-default.json": Data("{ corrupt".utf8)])
        let logs = RecordingLogSink()
        let delivered = Locked<[ConfigDocument]>([])
        let task = Task { try await source(server, cache: cache, logs: logs, refresh: .seconds(3600)).run { document in
            delivered.withValue { $0.append(document) }
        } }
        try await eventually("the live config") { delivered.value.count == 1 }
        task.cancel()
        #expect(delivered.value.map(\.origin) == [.network])
        #expect(logs.contains("cached config is unusable"))
        #expect(try cache.read("config-k-default.json") == live)
    }

    @Test func badResponsesAreTypedLoggedAndTheLastGoodConfigServes() async throws {
        let good = try Fixtures.data(.cdnConfigBaseline)
        let mode = Locked("")
        let server = try LoopbackHTTPServer { _ in
            switch mode.value {
            case "good": return configReply(good)
            case "notJSON": return .respond(status: 200, body: Data("<html>maintenance</html>".utf8))
            case "huge": return .respond(status: 200, body: Data(repeating: 0x20, count: 300_000))
            case "slow": return .delay(.seconds(4), then: configReply(good))
            default: return .drop
            }
        }
        let logs = RecordingLogSink()
        let cache = MemoryByteStore()
        let plain = source(server, cache: cache, logs: logs, transport: URLSessionTransport(maximumBodyBytes: 100_000),
                           timeout: .milliseconds(1500))
        mode.set("good")
        guard case .fresh = await plain.fetch(etag: nil) else { throw CancellationError() }
        for (name, expected) in [("notJSON", "unusable body"), ("huge", "larger than 100000 bytes"), ("slow", "timed out"),
                                 ("drop", "config fetch failed")] {
            mode.set(name)
            guard case .failed(let error) = await plain.fetch(etag: nil) else {
                Issue.record("\(name) should fail")
                continue
            }
            switch (name, error) {
            case ("notJSON", .unusableBody(.invalidJSON)), ("huge", .transport(.bodyTooLarge(limit: 100_000))),
                 ("slow", .transport(.timedOut)), ("drop", .transport(.unreachable)):
                break
            default:
                Issue.record("\(name) gave \(error)")
            }
            #expect(logs.contains(expected), "\(name): \(logs.messages.suffix(2))")
        }
        #expect(try cache.read("config-k-default.json") == nil, "fetch() alone never caches")
        server.stop()
        guard case .failed = await plain.fetch(etag: nil) else { throw CancellationError() }
        #expect(logs.messages.last?.contains("config fetch failed") == true)
    }

    @Test func sdkKeepsServingWhileTheNetworkFails() async throws {
        let good = try Fixtures.data(.cdnConfigBaseline)
        let healthy = Locked("")
        healthy.set("good")
        let server = try LoopbackHTTPServer { _ in healthy.value == "good" ? configReply(good) : .respond(status: 503) }
        let logs = RecordingLogSink()
        let harness = TestSDK(data: nil)
        let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "k"), ports: ConvertPorts(
            configSource: source(server, cache: MemoryByteStore(), logs: logs, refresh: .milliseconds(30)),
            visitorStore: harness.store, visitorIdStore: harness.idStore, trackingSink: harness.sink, logSink: logs))
        try await sdk.ready(timeout: .patience)
        healthy.set("down")
        try await eventually("failed refreshes") { logs.contains("HTTP 503") }
        let context = sdk.createContext(visitorId: "still", attributes: ["mobile": true])
        context.setLocationProperties(["location": "pricing"])
        #expect(await context.runExperience("test-experience-ab-fullstack-1") != nil)
    }

    @Test func unreachableHostDoesNotFailReadinessAndEmptyKeyDoes() async throws {
        let server = try LoopbackHTTPServer { _ in .drop }
        server.stop()
        let sdk = ConvertSwiftSDK(configuration: loopbackConfiguration(server, persistence: .memory), logSink: RecordingLogSink())
        await #expect(throws: ConvertError.readyTimedOut(milliseconds: 300)) { try await sdk.ready(timeout: .milliseconds(300)) }
        let empty = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: " ", persistence: .memory), logSink: RecordingLogSink())
        await #expect(throws: ConvertError.invalidConfiguration("the SDK key is empty")) { try await empty.ready() }
        let insecure = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "k", apiConfigEndpoint: "http://example.com",
                                                                           persistence: .memory), logSink: RecordingLogSink())
        do {
            try await insecure.ready()
            Issue.record("plain http must be refused without the allowance")
        } catch ConvertError.invalidConfiguration(let why) {
            #expect(why.contains("allowsInsecureHTTP"))
        }
    }
}



