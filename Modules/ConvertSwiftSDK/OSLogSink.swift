#if canImport(os)
import os
#endif
import ConvertEnvironment

/// Writes the SDK's log lines to Apple's unified logging (`os.Logger`), where Console and
/// `log stream` show them; writes nothing where `os` is missing (Linux). Messages are public:
/// the SDK never logs secrets.
///
/// ```swift
/// let sdk = ConvertSwiftSDK(configuration: configuration, logSink: OSLogSink())
/// ```
public struct OSLogSink: LogSink {
    /// Writes a message at a level: 0 debug, 1 info, 2 warning, 3 error.
    private let write: @Sendable (Int, String) -> Void

    /// Logs under `subsystem` (your app's bundle id, usually) and `category`.
    public init(subsystem: String = "com.convert.swift-sdk", category: String = "ConvertSwiftSDK") {
        var write: @Sendable (Int, String) -> Void = { _, _ in }
        #if canImport(os)
        let logger = Logger(subsystem: subsystem, category: category)
        write = { level, message in
            switch level {
            case 0: logger.debug("\(message, privacy: .public)")
            case 1: logger.info("\(message, privacy: .public)")
            case 2: logger.warning("\(message, privacy: .public)")
            default: logger.error("\(message, privacy: .public)")
            }
        }
        #endif
        self.write = write
    }

    public func log(_ level: LogLevel, _ message: String) {
        switch level {
        case .trace, .debug: write(0, message)
        case .info: write(1, message)
        case .warn: write(2, message)
        case .error: write(3, message)
        case .silent: break
        }
    }
}
