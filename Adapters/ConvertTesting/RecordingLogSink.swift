import ConvertSupport
import Foundation

/// A log sink that keeps every line, for asserting on what the SDK said.
public final class RecordingLogSink: LogSink, @unchecked Sendable {
    // `lines` is guarded by `lock`.
    private let lock = NSLock()
    private var lines: [(LogLevel, String)] = []

    public init() {}

    public func log(_ level: LogLevel, _ message: String) {
        lock.withLock { lines.append((level, message)) }
    }

    /// Every message, in order.
    public var messages: [String] { lock.withLock { lines.map(\.1) } }

    /// The messages at `level`.
    public func messages(at level: LogLevel) -> [String] {
        lock.withLock { lines.filter { $0.0 == level }.map(\.1) }
    }

    /// Whether any message contains `text`.
    public func contains(_ text: String) -> Bool {
        messages.contains { $0.contains(text) }
    }
}
