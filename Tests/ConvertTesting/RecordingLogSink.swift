import ConvertEnvironment
import ConvertSynchronization
import Foundation

/// A log sink that keeps every line, for asserting on what the SDK said.
public final class RecordingLogSink: LogSink, Sendable {
    private let lines = Locked<[(LogLevel, String)]>([])
    private let kept = Locked<[LogRecord]>([])

    /// A sink with no lines yet.
    public init() {}

    public func log(_ level: LogLevel, _ message: String) {
        log(LogRecord(level: level, message: message))
    }

    public func log(_ record: LogRecord) {
        lines.withValue { $0.append((record.level, record.message)) }
        kept.withValue { $0.append(record) }
    }

    /// Every record, with its metadata, in order.
    public var records: [LogRecord] { kept.value }

    /// Every message, in order.
    public var messages: [String] { lines.value.map(\.1) }

    /// The messages at `level`.
    public func messages(at level: LogLevel) -> [String] {
        lines.value.filter { $0.0 == level }.map(\.1)
    }

    /// Whether any message contains `text`.
    public func contains(_ text: String) -> Bool {
        messages.contains { $0.contains(text) }
    }
}
