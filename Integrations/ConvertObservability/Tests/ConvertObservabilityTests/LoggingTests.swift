import ConvertLogging
import ConvertMemory
import ConvertSwiftSDK
import ConvertTesting
import ConvertTransport
import Foundation
import InMemoryLogging
import Logging
import Testing

@Suite struct LoggingTests {
    static let configuration = ConvertConfiguration(sdkKey: "", networkTracking: false, persistence: .memory)

    @Test func linesGoThroughTheLoggerWithTheirMetadataAtTheLoggersLevel() async throws {
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "convert", factory: { _ in handler })
        logger.logLevel = .info
        let sink = SwiftLogSink(logger)
        #expect(sink.logger.label == "convert")
        #expect(sink.minimumLevel == .info)

        let sdk = ConvertSwiftSDK(configData: ConvertSwiftSDK.sampleConfig, configuration: Self.configuration, logger: logger)
        #expect(sdk.configuration.logLevel == .info)
        try await sdk.ready(timeout: .seconds(30))
        _ = sdk.createContext(visitorId: "visitor-42").variation(forExperience: "no-such-experience")

        let installed = try #require(handler.entries.first { $0.message.description.hasPrefix("config installed") })
        #expect(installed.level == .info)
        #expect(installed.metadata["convert.origin"] == "direct")
        let missing = try #require(handler.entries.first { $0.message.description.contains("no-such-experience") })
        #expect(missing.level == .warning)
        #expect(missing.metadata["convert.experience"] == "no-such-experience")
        #expect(missing.metadata["convert.reason"] == "experienceNotFound")
        #expect(!handler.entries.contains { $0.level < .info })
    }

    @Test func oneLevelOnTheLoggerIsTheSDKsMinimum() async throws {
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "convert", factory: { _ in handler })
        logger.logLevel = .warning
        #expect(Self.configuration.logging(to: logger).logLevel == .warn)

        let sdk = ConvertSwiftSDK(configData: ConvertSwiftSDK.sampleConfig, configuration: Self.configuration, logger: logger)
        try await sdk.ready(timeout: .seconds(30))
        _ = sdk.createContext(visitorId: "visitor-42").variation(forExperience: "no-such-experience")
        #expect(handler.entries.map(\.level) == [.warning])
    }

    @Test func theLoggerTakesThePortsPartsBesideItAndTheConfigurationOnce() async throws {
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "convert", factory: { _ in handler })
        logger.logLevel = .debug
        let transport = StubTransport { _ in HTTPResponse(status: 200) }
        let store = MemoryVisitorDataStore()
        let configuration = ConvertConfiguration(sdkKey: "10035569/10034190", persistence: .memory)
        let sdk = ConvertSwiftSDK(configuration: configuration, logger: logger, directData: ConvertSwiftSDK.sampleConfig,
                                  transport: transport, visitorStore: store)
        #expect(sdk.configuration.logLevel == .debug)
        try await sdk.ready(timeout: .seconds(30))

        // Audience data the sample config's experience does not take: nil, and the debug line says why.
        let outsider = sdk.createContext(visitorId: "visitor-7", attributes: ["desktop": true, "browser": "CH"])
        outsider.setLocationProperties(["location": "pricing"])
        #expect(outsider.variation(forExperience: "test-experience-ab-fullstack-1") == nil)
        let why = try #require(handler.entries.first { $0.metadata["convert.reason"] == "audienceNotMatched" })
        #expect(why.level == .debug)
        #expect(why.message.description.contains("test-experience-ab-fullstack-1: no audience matched"))
        #expect(why.metadata["convert.visitor"] == "visitor-7")

        let insider = sdk.createContext(visitorId: "visitor-8", attributes: ["desktop": true, "browser": "FF"])
        insider.setLocationProperties(["location": "pricing"])
        #expect(insider.variation(forExperience: "test-experience-ab-fullstack-1") != nil)
        #expect(store.data(for: "10035569-10034190-visitor-8")?.bucketing.isEmpty == false, "the store given is the SDK's")
        await sdk.shutdown(timeout: .seconds(10))
        #expect(transport.requests.contains { $0.url.path.hasSuffix("/track/10035569/10034190") }, "the transport given carries tracking")
    }

    @Test func levelsMapBothWays() {
        #expect(LogLevel.allCases.map { Logger.Level($0) } == [.trace, .debug, .info, .warning, .error, nil])
        #expect(Logger.Level.allCases.map { LogLevel(minimumFor: $0) } == [.trace, .debug, .info, .warn, .warn, .error, .silent])
        // What a logger at each level keeps of the SDK's lines is what the SDK builds.
        for loggerLevel in Logger.Level.allCases {
            let minimum = LogLevel(minimumFor: loggerLevel)
            for level in LogLevel.allCases where level != .silent {
                let kept = Logger.Level(level).map { $0 >= loggerLevel } ?? false
                #expect(kept == (level >= minimum && minimum != .silent), "\(loggerLevel) \(level)")
            }
        }
    }
}
