import ConvertMemory
import ConvertSwiftSDK
import ConvertTesting
import Foundation
import Testing

/// What a new user meets first: errors that say why, and files only where asked.
@Suite struct FirstRunTests {
    @Test func readyTimingOutSaysWhyNoConfigCame() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 404) }
        defer { server.stop() }
        let logs = RecordingLogSink()
        let sdk = ConvertSwiftSDK(configuration: loopbackConfiguration(server, persistence: .memory), logSink: logs)
        try await eventually("a failed fetch") { sdk.lastConfigFailure != nil }
        await #expect(throws: ConvertError.readyTimedOut(milliseconds: 50)) { try await sdk.ready(timeout: .milliseconds(50)) }
        let failure = try #require(sdk.lastConfigFailure)
        #expect(failure.contains("/api/v1/config/10035569/10034190 failed: HTTP 404"), "\(failure)")
        #expect(failure.contains("is the SDK key 10035569/10034190 right?"), "\(failure)")
        #expect(logs.contains("not ready within 50 ms: config fetch from"), "the timeout is logged with its cause: \(logs.messages)")
        #expect(logs.contains("no config yet; retrying"), "\(logs.messages)")
        #expect(!logs.contains("keeping the current config"), "there is no current config to keep: \(logs.messages)")
    }

    @Test func aKeyThatIsNotAccountSlashProjectIsNamedAtStart() async throws {
        #expect(ConvertConfiguration.problem(withSDKKey: "10035569/10034190") == nil)
        #expect(ConvertConfiguration.problem(withSDKKey: "") == nil, "no key: direct data, said by ready() instead")
        for bad in ["YOUR_SDK_KEY", "10035569", "10035569/", "/10034190", "10035569/abc", "1/2/3"] {
            #expect(ConvertConfiguration.problem(withSDKKey: bad)?.contains("is not of the form accountId/projectId") == true, "\(bad)")
        }
        let logs = RecordingLogSink()
        let sdk = ConvertSwiftSDK(configData: ConvertSwiftSDK.sampleConfig,
                                  configuration: ConvertConfiguration(sdkKey: "my-project", networkTracking: false, persistence: .memory),
                                  logSink: logs)
        try await sdk.ready(timeout: .patience)
        #expect(logs.contains(#"sdkKey "my-project" is not of the form accountId/projectId"#), "\(logs.messages)")
    }

    @Test func aReplacedVisitorStoreIsNeverOpenedOnDisk() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let configuration = ConvertConfiguration(sdkKey: "10035569/10034190", networkTracking: false, storageDirectory: directory)
        let store = MemoryVisitorDataStore()
        let ports = ConvertPorts.live(configuration, logSink: SilentLogSink(), directData: ConvertSwiftSDK.sampleConfig, visitorStore: store)
        #expect(ports.visitorStore as? MemoryVisitorDataStore === store)
        let sdk = ConvertSwiftSDK(configuration: configuration, ports: ports)
        try await sdk.ready(timeout: .patience)
        _ = sdk.createContext(visitorId: "v1").variation(forExperience: "test-experience-ab-fullstack-4")
        await sdk.shutdown(timeout: .seconds(1))
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(!files.contains { $0.hasPrefix("visitors") }, "no visitor files: \(files)")
        #expect(files.contains { $0.hasPrefix("events.journal") }, "the journal still is a file: \(files)")
    }

    @Test func noKeyAndNoDataWritesNoFiles() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "", storageDirectory: directory), logSink: SilentLogSink())
        await #expect(throws: ConvertError.invalidConfiguration("the SDK key is empty")) { try await sdk.ready() }
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).isEmpty)
    }

    @Test func durationOptionsAreTheMillisecondOnes() {
        var configuration = ConvertConfiguration(sdkKey: "10035569/10034190")
        #expect(configuration.requestTimeout == .seconds(10))
        #expect(configuration.dataRefreshInterval == .seconds(300))
        #expect(configuration.eventsReleaseInterval == .seconds(1))
        configuration.requestTimeout = .milliseconds(2500)
        configuration.dataRefreshInterval = .seconds(60)
        configuration.eventsReleaseInterval = .milliseconds(200)
        #expect(configuration.requestTimeoutMs == 2500)
        #expect(configuration.dataRefreshIntervalMs == 60_000)
        #expect(configuration.eventsReleaseIntervalMs == 200)
    }
}
