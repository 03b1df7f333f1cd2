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

/// Where the SDK's log lines go. Bridge it to swift-log, os_log or your own logger.
///
/// Implementation requirements: called from any thread, concurrently; must not block for long.
public protocol LogSink: Sendable {
    /// Records one line at `level`.
    func log(_ level: LogLevel, _ message: String)
}

/// Drops every line.
public struct SilentLogSink: LogSink {
    /// A sink that drops every line.
    public init() {}
    public func log(_ level: LogLevel, _ message: String) {}
}

/// A sink filtered by a minimum level; messages are built only when they will be written.
public struct SDKLog: Sendable {
    /// Where written lines go.
    public let sink: any LogSink
    /// The least severe level written; `.silent` writes nothing.
    public let minimum: LogLevel

    /// A log writing lines at `minimum` or above to `sink`.
    public init(sink: any LogSink, minimum: LogLevel) {
        self.sink = sink
        self.minimum = minimum
    }

    /// A log that writes nothing.
    public static let silent = SDKLog(sink: SilentLogSink(), minimum: .silent)

    /// Whether lines at `level` are written.
    @inlinable
    public func isEnabled(_ level: LogLevel) -> Bool { level >= minimum && level != .silent }

    /// Writes `message` at `level`, its control characters escaped: messages carry visitor ids,
    /// keys and peers' answers, and a newline in one of them must not forge a log line.
    @inlinable
    public func callAsFunction(_ level: LogLevel, _ message: @autoclosure () -> String) {
        if isEnabled(level) { sink.log(level, Self.escapingControlCharacters(message())) }
    }

    /// `text` with C0 controls and DEL written as `\n`, `\r`, `\t` or `\u{XX}`; unchanged (and
    /// not copied) when it has none.
    public static func escapingControlCharacters(_ text: String) -> String {
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
    @inlinable public func debug(_ message: @autoclosure () -> String) { self(.debug, message()) }
    /// Writes `message` at `.info`, built only when that level is written.
    @inlinable public func info(_ message: @autoclosure () -> String) { self(.info, message()) }
    /// Writes `message` at `.warn`, built only when that level is written.
    @inlinable public func warn(_ message: @autoclosure () -> String) { self(.warn, message()) }
    /// Writes `message` at `.error`, built only when that level is written.
    @inlinable public func error(_ message: @autoclosure () -> String) { self(.error, message()) }
}
