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

extension ConvertSwiftSDK {
    /// Starts the SDK for an SDK key: the config is fetched from Convert's CDN (cached between
    /// runs) and refreshed every `dataRefreshIntervalMs`.
    ///
    /// ```swift
    /// let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "YOUR_SDK_KEY"))
    /// try await sdk.ready()
    /// ```
    public convenience init(configuration: ConvertConfiguration) {
        self.init(configuration: configuration, ports: .defaults(for: configuration, source: NetworkConfigSourceUnavailable(configuration: configuration)))
    }
}

/// Stands in for the CDN source until one is wired: refuses an empty key, otherwise says why no
/// config can come.
struct NetworkConfigSourceUnavailable: ConfigSource {
    let configuration: ConvertConfiguration

    func run(deliver: @escaping @Sendable (ConfigDocument) async -> Void) async throws {
        if configuration.sdkKey.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            throw ConvertError.invalidConfiguration("the SDK key is empty")
        }
        throw ConvertError.invalidConfiguration("no network config source is available in this build")
    }
}
