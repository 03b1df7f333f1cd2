import ConvertFileStorage
import ConvertMemory
import ConvertSwiftSDK
import ConvertTesting
import ConvertTransport
import ConvertVisitor
import ConvertSynchronization
import Foundation
import Testing

@Suite(.serialized) struct HostileInputTests {
    private func ready(_ key: String) async -> ConvertError? {
        let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: key, persistence: .memory), logSink: RecordingLogSink())
        do {
            try await sdk.ready(timeout: .patience)
            return nil
        } catch let error as ConvertError {
            return error
        } catch {
            return .cancelled
        }
    }

    @Test func badSDKKeysAreRefusedClearly() async {
        #expect(await ready("") == .invalidConfiguration("the SDK key is empty"))
        #expect(await ready(" \n\t ") == .invalidConfiguration("the SDK key is empty"))
        #expect(await ready(String(repeating: "k", count: 10_000_000))
                == .invalidConfiguration("the SDK key is not valid: longer than 256 bytes"))
        #expect(await ready("key with space") == .invalidConfiguration("the SDK key is not valid: contains white space or control characters"))
        #expect(await ready("key\u{0}nul") == .invalidConfiguration("the SDK key is not valid: contains white space or control characters"))
    }

    @Test func badVisitorIdsDegradeWithALogLine() async throws {
        let harness = TestSDK(data: try Fixtures.data(.cdnConfigBaseline))
        try await harness.sdk.ready()
        let huge = String(repeating: "v", count: 10_000_000)
        for id in ["", "   ", "\n", huge] {
            let context = harness.sdk.createContext(visitorId: id, attributes: ["mobile": true])
            context.setLocationProperties(["location": "pricing"])
            #expect(context.visitorIdProblem != nil)
            #expect(await context.runExperience("test-experience-ab-fullstack-1") == nil)
            #expect(await context.runFeature("feature-1").status == .disabled)
            #expect(await context.trackConversion("button-primary-click") == .invalidVisitorId)
            #expect(await context.runCustomSegments(["test-segment-1"]).isEmpty)
        }
        #expect(harness.sink.events.isEmpty)
        #expect(harness.store.count == 0)
        #expect(harness.logs.contains("the visitor id is empty"))
        #expect(harness.logs.contains("the visitor id is longer than 1024 bytes"))
        #expect(harness.logs.messages.allSatisfy { $0.utf8.count < 2000 }, "a huge id never floods the log")
        for id in ["é🚀\u{FFFD}", "\u{202E}rtl", "tab\tinside", "a\u{0}b"] {
            let context = harness.sdk.createContext(visitorId: id, attributes: ["mobile": true])
            context.setLocationProperties(["location": "pricing"])
            #expect(await context.runExperience("test-experience-ab-fullstack-1") != nil, "\(id) is a usable id")
        }
    }

    @Test func oddAttributesAndKeysGiveResultsNotCrashes() async throws {
        let harness = TestSDK(data: try Fixtures.data(.cdnConfigBaseline))
        try await harness.sdk.ready()
        let context = harness.sdk.createContext(visitorId: "odd", attributes: [
            "desktop": ["nested": ["deep": [1, 2, .null]]], "browser": .number(.nan), "mobile": .number(.infinity),
            "": "empty key", "location": .string(String(repeating: "x", count: 1_000_000)),
        ])
        context.setLocationProperties(["location": .number(.infinity), "feature": .number(-.infinity)])
        _ = await context.runExperiences()
        _ = await context.runFeatures()
        #expect(await context.runExperience("no-such-key") == nil)
        #expect(await context.trackConversion("no-such-goal") == .unknownGoal)
        #expect(await context.trackConversion("button-primary-click", goalData: [GoalDataItem(.amount, .number(-.infinity))])
                == .invalidGoalData("amount is not a finite number"))
        #expect(context.setPreview("999999999999999999999999999999.1"), "digits of any length are a valid preview")
        #expect(await context.runExperience("test-experience-ab-fullstack-1") == nil)
        context.clearPreview()
        await context.setDefaultSegments(["country": .number(.nan), "devices": [1, "x"]])
        #expect(context.segments().devices == ["1", "x"])
    }

    @Test func contextsOutliveTheirSDK() async throws {
        // Direct data tracks to the metrics host; a port on loopback that refuses keeps the test local.
        let configuration = ConvertConfiguration(sdkKey: "", apiTrackEndpoint: "http://127.0.0.1:9", persistence: .memory,
                                                 allowsInsecureHTTP: true)
        var sdk: ConvertSwiftSDK? = ConvertSwiftSDK(configData: try Fixtures.data(.cdnConfigBaseline),
                                                    configuration: configuration, logSink: RecordingLogSink())
        try await sdk!.ready()
        let context = sdk!.createContext(visitorId: "orphan", attributes: ["mobile": true])
        context.setLocationProperties(["location": "pricing"])
        weak let released = sdk
        sdk = nil
        #expect(released == nil, "the SDK itself is released")
        #expect(await context.runExperience("test-experience-ab-fullstack-1") != nil)
        // A released SDK stops its delivery loop: the context says its event will not be sent.
        #expect(await context.trackConversion("button-primary-click") == .dropped(eventCount: 1))
    }

    @Test func callsBeforeReadyNeverHang() async throws {
        let harness = TestSDK(data: nil)
        let context = harness.sdk.createContext(visitorId: "early")
        let start = ContinuousClock.now
        #expect(await context.runExperience("x") == nil)
        #expect(await context.runFeatures().isEmpty)
        #expect(await context.trackConversion("x") == .notReady)
        await context.setDefaultSegments(VisitorSegments(country: "US"))
        await harness.sdk.flush()
        await #expect(throws: ConvertError.readyTimedOut(milliseconds: 10)) { try await harness.sdk.ready(timeout: .milliseconds(10)) }
        #expect(ContinuousClock.now - start < .seconds(60), "nothing waits for a config that never comes")
    }
}

@Suite(.serialized) struct SecretTests {
    @Test func secretsNeverReachLogsErrorsOrDescriptions() async throws {
        let secret = "sk-SECRET-0123456789", token = "dbg-TOKEN-9876543210"
        let config = try Fixtures.data(.cdnConfigBaseline)
        let mode = Locked<Int>(0)
        let server = try LoopbackHTTPServer { request in
            switch mode.value {
            case 0: return request.method == "GET" ? .respond(status: 200, body: config) : .respond(status: 500)
            case 1: return .respond(status: 401, body: Data("bad secret \(secret)".utf8))
            default: return .drop
            }
        }
        let logs = RecordingLogSink()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secrets-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let configuration = ConvertConfiguration(
            sdkKey: "10035569/10034190", sdkKeySecret: secret, apiConfigEndpoint: server.baseURL,
            apiTrackEndpoint: server.baseURL, dataRefreshIntervalMs: 1000, eventsBatchSize: 1, debugToken: token,
            logLevel: .trace, storageDirectory: directory, requestTimeoutMs: 500, allowsInsecureHTTP: true)
        let sdk = ConvertSwiftSDK(configuration: configuration, logSink: logs)
        try await sdk.ready(timeout: .patience)
        #expect(server.requests.first?.header("Authorization") == "Bearer \(secret)", "the secret does go on the wire")
        let context = sdk.createContext(visitorId: "s", attributes: ["mobile": true])
        context.setLocationProperties(["location": "pricing"])
        _ = await context.runExperience("test-experience-ab-fullstack-1")
        await sdk.flush()
        mode.set(1)
        try await eventually("a refused fetch logged") { logs.messages.contains { $0.contains("refused with HTTP 401") } }
        let failuresBefore = logs.messages.filter { $0.contains("config fetch failed") }.count
        mode.set(2)
        try await eventually("a dropped fetch logged") {
            logs.messages.filter { $0.contains("config fetch failed") }.count > failuresBefore
        }
        let everything = logs.messages.joined(separator: "\n") + configuration.description + "\(configuration)"
            + String(reflecting: configuration)
        #expect(logs.messages.count > 3)
        #expect(!everything.contains(secret))
        #expect(!everything.contains(token))
        #expect(configuration.description.contains("sdkKeySecret: <redacted>"))
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        for file in files {
            let bytes = try Data(contentsOf: directory.appendingPathComponent(file))
            #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(file) holds no secret")
            #expect(FileStorage.permissions(of: directory.appendingPathComponent(file)) == 0o600, "\(file) is 0600")
        }
    }

    @Test func onlyHTTPSUnlessAllowed() async throws {
        for endpoint in ["http://config.example.com", "ftp://x", "not a url"] {
            let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "k", apiConfigEndpoint: endpoint, persistence: .memory),
                                      logSink: RecordingLogSink())
            do {
                try await sdk.ready(timeout: .patience)
                Issue.record("\(endpoint) accepted")
            } catch let error as ConvertError {
                guard case .invalidConfiguration = error else {
                    Issue.record("\(endpoint): \(error)")
                    continue
                }
            } catch {
                Issue.record("\(endpoint): \(error)")
            }
        }
        #expect(throws: TransportError.self) { try EndpointPolicy().url("http://127.0.0.1:8080") }
        #expect(try EndpointPolicy(allowsInsecureHTTP: true).url("http://127.0.0.1:8080").scheme == "http")
        #expect(throws: TransportError.self) {
            try TrackingEndpoint(template: "http://[project_id].example.com", sdkKey: "k").url(projectId: "1")
        }
    }
}

