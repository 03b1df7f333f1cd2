#if canImport(os)
import ConvertEnvironment
import os

/// Writes the SDK's log lines to Apple's unified logging (`os.Logger`), where Console and
/// `log stream` show them. Messages are public: the SDK never logs secrets.
///
/// ```swift
/// let sdk = ConvertSwiftSDK(configuration: configuration, logSink: OSLogSink())
/// ```
public struct OSLogSink: LogSink {
    private let logger: Logger

    /// Logs under `subsystem` (your app's bundle id, usually) and `category`.
    public init(subsystem: String = "com.convert.swift-sdk", category: String = "ConvertSwiftSDK") {
        logger = Logger(subsystem: subsystem, category: category)
    }

    public func log(_ level: LogLevel, _ message: String) {
        switch level {
        case .trace, .debug: logger.debug("\(message, privacy: .public)")
        case .info: logger.info("\(message, privacy: .public)")
        case .warn: logger.warning("\(message, privacy: .public)")
        case .error: logger.error("\(message, privacy: .public)")
        case .silent: break
        }
    }
}
#endif
