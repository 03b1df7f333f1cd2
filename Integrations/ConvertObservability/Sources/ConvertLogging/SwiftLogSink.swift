import ConvertSwiftSDK
import ConvertTransport
import Foundation
import Logging

/// A `LogSink` that writes the SDK's log lines through a swift-log `Logger`, each with the
/// record's metadata (`convert.call`, `convert.experience`, `convert.feature`, `convert.goal`,
/// `convert.reason`, `convert.origin`, and `convert.visitor` on lines at debug and below).
///
/// Set the level once, on the logger, and start the SDK with it: the SDK's own minimum
/// (`ConvertConfiguration.logLevel`) is then derived from it, so lines the
/// logger would drop are never built.
///
/// ```swift
/// var logger = Logger(label: "convert")
/// logger.logLevel = .info
/// let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: key), logger: logger)
/// ```
///
/// The SDK reads its minimum level once, at start: a level changed on the logger later does not
/// make the SDK write lines below the level it started with.
public struct SwiftLogSink: LogSink {
    /// The logger lines are written through; its label, handler and metadata are the app's.
    public let logger: Logger

    /// A sink writing through `logger`.
    public init(_ logger: Logger) {
        self.logger = logger
    }

    /// A sink writing through a logger labelled `label`, made by the bootstrapped
    /// `LoggingSystem`, at `level`.
    public init(label: String = "convert", level: Logger.Level = .info) {
        var logger = Logger(label: label)
        logger.logLevel = level
        self.logger = logger
    }

    /// The SDK's minimum level that builds exactly the lines this sink's logger keeps.
    public var minimumLevel: LogLevel { LogLevel(minimumFor: logger.logLevel) }

    /// Writes `message` without metadata.
    public func log(_ level: LogLevel, _ message: String) {
        log(LogRecord(level: level, message: message))
    }

    /// Writes the record at its swift-log level, its metadata as string values.
    public func log(_ record: LogRecord) {
        guard let level = Logger.Level(record.level) else { return }
        logger.log(level: level, "\(record.message)",
                   metadata: record.metadata.isEmpty ? nil : record.metadata.mapValues { .string($0) },
                   source: "ConvertSwiftSDK")
    }
}

extension Logger.Level {
    /// The swift-log level of an SDK line: `warn` is `.warning`, the others keep their names;
    /// `nil` for `silent`, which no line has.
    public init?(_ level: LogLevel) {
        switch level {
        case .trace: self = .trace
        case .debug: self = .debug
        case .info: self = .info
        case .warn: self = .warning
        case .error: self = .error
        case .silent: return nil
        }
    }
}

extension LogLevel {
    /// The SDK's minimum level for a logger at `level`: the least severe SDK level whose lines
    /// that logger keeps (`notice` keeps warnings, `critical` keeps no SDK line: `silent`).
    public init(minimumFor level: Logger.Level) {
        switch level {
        case .trace: self = .trace
        case .debug: self = .debug
        case .info: self = .info
        case .notice, .warning: self = .warn
        case .error: self = .error
        case .critical: self = .silent
        }
    }
}

extension ConvertConfiguration {
    /// This configuration with `logLevel` set to what `logger` keeps
    /// (`LogLevel(minimumFor:)`); pass a ``SwiftLogSink`` of the same logger as the sink.
    public func logging(to logger: Logger) -> ConvertConfiguration {
        var configuration = self
        configuration.logLevel = LogLevel(minimumFor: logger.logLevel)
        return configuration
    }
}

extension ConvertSwiftSDK {
    /// Starts the SDK for an SDK key on the default wiring (see `ConvertPorts.live`), logging
    /// through `logger` at the logger's level. The configuration is given once: its log level is
    /// set from the logger, and the parts a server swaps in are arguments of their own.
    ///
    /// ```swift
    /// let sdk = ConvertSwiftSDK(configuration: configuration, logger: logger,
    ///                           transport: AsyncHTTPClientTransport(), visitorStore: store)
    /// ```
    ///
    /// - Parameters:
    ///   - configuration: the key, endpoints, intervals and persistence; its `logLevel` is
    ///     replaced by what `logger` keeps.
    ///   - logger: where the SDK's lines go, with their metadata.
    ///   - directData: config bytes to start from instead of fetching (the sample config, a
    ///     bundled file).
    ///   - transport: carries config fetches and tracking; URLSession when `nil`.
    ///   - visitorStore: the visitor data store to use instead of the configured one (a
    ///     `WriteBehindVisitorStore` over Redis, say).
    public convenience init(configuration: ConvertConfiguration, logger: Logger, directData: Data? = nil,
                            transport: (any HTTPTransport)? = nil, visitorStore: (any VisitorDataStore)? = nil) {
        let configuration = configuration.logging(to: logger)
        self.init(configuration: configuration,
                  ports: .live(configuration, logSink: SwiftLogSink(logger), directData: directData, transport: transport,
                               visitorStore: visitorStore))
    }

    /// Starts the SDK from direct config data (see `init(configData:configuration:logSink:)`),
    /// logging through `logger` at the logger's level.
    public convenience init(configData: Data,
                            configuration: ConvertConfiguration = ConvertConfiguration(sdkKey: "", persistence: .memory),
                            logger: Logger) {
        self.init(configData: configData, configuration: configuration.logging(to: logger), logSink: SwiftLogSink(logger))
    }
}
