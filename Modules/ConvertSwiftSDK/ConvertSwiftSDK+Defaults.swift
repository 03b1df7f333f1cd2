@_exported import ConvertCore
@_exported import ConvertEvents
@_exported import ConvertModel
@_exported import ConvertRules
@_exported import ConvertStorage
@_exported import ConvertSupport
import ConvertMemory
import Foundation

extension ConvertSwiftSDK {
    /// Starts the SDK from direct config data (a bundled file, a test fixture), skipping the
    /// network fetch. ``ready()`` throws ``ConvertError/invalidConfiguration(_:)`` when the data is
    /// empty or not a valid config.
    ///
    /// ```swift
    /// let sdk = ConvertSwiftSDK(configData: try Data(contentsOf: bundledConfigURL))
    /// try await sdk.ready()
    /// ```
    public convenience init(configData: Data, configuration: ConvertConfiguration = ConvertConfiguration(sdkKey: "")) {
        self.init(configuration: configuration, ports: .defaults(for: configuration, source: DirectConfigSource(bytes: configData)))
    }
}

extension ConvertPorts {
    /// The default wiring: in-memory visitor data and id stores, log lines on standard error.
    public static func defaults(for configuration: ConvertConfiguration, source: any ConfigSource,
                                trackingSink: any TrackingSink = DiscardingTrackingSink()) -> ConvertPorts {
        ConvertPorts(configSource: source,
                     visitorStore: MemoryVisitorDataStore(capacity: configuration.visitorStoreCapacity),
                     visitorIdStore: MemoryVisitorIdStore(),
                     trackingSink: trackingSink,
                     logSink: StandardErrorLogSink())
    }
}

/// Writes log lines to standard error as `[Convert] LEVEL message`.
public struct StandardErrorLogSink: LogSink {
    public init() {}

    public func log(_ level: LogLevel, _ message: String) {
        FileHandle.standardError.write(Data("[Convert] \(level.name) \(message)\n".utf8))
    }
}
