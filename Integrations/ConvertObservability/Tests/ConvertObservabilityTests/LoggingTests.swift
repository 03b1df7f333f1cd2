import ConvertLogging
import ConvertSwiftSDK
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
