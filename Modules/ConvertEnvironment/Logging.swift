/// How much the SDK says.
public enum LogLevel: Int, Sendable, Hashable, Comparable, CaseIterable, Codable {
    /// Levels from the most verbose to the least; as a minimum, `silent` writes nothing.
    case trace, debug, info, warn, error, silent

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The level's name as printed.
    public var name: String {
        switch self {
        case .trace: return "TRACE"
        case .debug: return "DEBUG"
        case .info: return "INFO"
        case .warn: return "WARN"
        case .error: return "ERROR"
        case .silent: return "SILENT"
        }
    }
}

/// One log line with what it is about, as structured metadata.
///
/// Metadata keys the SDK sets: `convert.call` (the API call), `convert.experience`,
/// `convert.feature`, `convert.goal`, `convert.reason`, `convert.origin` (where a config came
/// from), `convert.visitor` (only on lines at `.debug` and below).
public struct LogRecord: Sendable, Hashable {
    /// How severe the line is.
    public let level: LogLevel
    /// The text, its control characters escaped.
    public let message: String
    /// What the line is about; empty when nothing is attached.
    public let metadata: [String: String]

    /// A record of `message` at `level` with `metadata`.
    public init(level: LogLevel, message: String, metadata: [String: String] = [:]) {
        self.level = level
        self.message = message
        self.metadata = metadata
    }
}

/// Where the SDK's log lines go. Bridge it to swift-log, os_log or your own logger.
///
/// Implementation requirements: called from any thread, concurrently; must not block for long.
/// The SDK calls ``log(_:)-(LogRecord)``; a sink that only implements
/// ``log(_:_:)`` receives the message without its metadata.
public protocol LogSink: Sendable {
    /// Records one line at `level`.
    func log(_ level: LogLevel, _ message: String)
    /// Records one line with its metadata.
    func log(_ record: LogRecord)
}

extension LogSink {
    /// Writes the message alone.
    public func log(_ record: LogRecord) { log(record.level, record.message) }
}

/// Drops every line.
public struct SilentLogSink: LogSink {
    /// A sink that drops every line.
    public init() {}
    public func log(_ level: LogLevel, _ message: String) {}
}

/// A port adapter that logs through the SDK's log once the SDK hands it over: an adapter made
/// before the SDK (a shared visitor store, say) cannot be given that log at its creation.
public protocol SDKLogAdopting: Sendable {
    /// Logs through `log` from now on, unless the adapter was given a log of its own; the SDK
    /// calls it once, when it is created with the adapter.
    func adoptLog(_ log: SDKLog)
}

/// A sink filtered by a minimum level; messages are built only when they will be written.
public struct SDKLog: Sendable {
    /// Where written lines go.
    @usableFromInline package let sink: any LogSink
    /// The least severe level written; `.silent` writes nothing.
    @usableFromInline package let minimum: LogLevel

    /// A log writing lines at `minimum` or above to `sink`.
    public init(sink: any LogSink, minimum: LogLevel) {
        self.sink = sink
        self.minimum = minimum
    }

    /// A log that writes nothing.
    public static let silent = SDKLog(sink: SilentLogSink(), minimum: .silent)

    /// Whether lines at `level` are written.
    @inlinable
    package func isEnabled(_ level: LogLevel) -> Bool { level >= minimum && level != .silent }

    /// Writes `message` at `level`, its control characters escaped: messages carry visitor ids,
    /// keys and peers' answers, and a newline in one of them must not forge a log line.
    @inlinable
    package func callAsFunction(_ level: LogLevel, _ message: @autoclosure () -> String,
                                metadata: @autoclosure () -> [String: String] = [:]) {
        if isEnabled(level) {
            sink.log(LogRecord(level: level, message: Self.escapingControlCharacters(message()),
                               metadata: metadata().mapValues(Self.escapingControlCharacters)))
        }
    }

    /// `text` with C0 controls and DEL written as `\n`, `\r`, `\t` or `\u{XX}`; unchanged (and
    /// not copied) when it has none.
    @usableFromInline package static func escapingControlCharacters(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x0A: out += "\\n"
            case 0x0D: out += "\\r"
            case 0x09: out += "\\t"
            case 0..<0x20, 0x7F: out += "\\u{" + String(scalar.value, radix: 16) + "}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Writes `message` at `.debug`, built only when that level is written.
    @inlinable package func debug(_ message: @autoclosure () -> String,
                                 metadata: @autoclosure () -> [String: String] = [:]) {
        self(.debug, message(), metadata: metadata())
    }
    /// Writes `message` at `.info`, built only when that level is written.
    @inlinable package func info(_ message: @autoclosure () -> String,
                                 metadata: @autoclosure () -> [String: String] = [:]) {
        self(.info, message(), metadata: metadata())
    }
    /// Writes `message` at `.warn`, built only when that level is written.
    @inlinable package func warn(_ message: @autoclosure () -> String,
                                 metadata: @autoclosure () -> [String: String] = [:]) {
        self(.warn, message(), metadata: metadata())
    }
    /// Writes `message` at `.error`, built only when that level is written.
    @inlinable package func error(_ message: @autoclosure () -> String,
                                 metadata: @autoclosure () -> [String: String] = [:]) {
        self(.error, message(), metadata: metadata())
    }
}
