import ConvertSupport
import Foundation

/// A clock the test moves by hand.
public final class ManualClock: @unchecked Sendable {
    // `current` is guarded by `lock`.
    private let lock = NSLock()
    private var current: Date

    public init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        current = start
    }

    /// The time now.
    public var now: Date { lock.withLock { current } }

    /// Moves the clock forward.
    public func advance(by seconds: TimeInterval) {
        lock.withLock { current += seconds }
    }

    /// The clock as a ``TimeSource`` port.
    public var timeSource: TimeSource { TimeSource { [self] in now } }
}
