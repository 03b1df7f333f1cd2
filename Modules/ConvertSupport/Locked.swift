import Foundation

/// A value behind a lock: the one shape of shared mutable state in the SDK.
///
/// ```swift
/// let seen = Locked<[String]>([])
/// seen.withValue { $0.append("b") }
/// ```
///
/// The `@unchecked Sendable` is sound because every access to the value goes through the lock.
public final class Locked<Value>: @unchecked Sendable {
    // `stored` is guarded by `lock`.
    private let lock = NSLock()
    private var stored: Value

    /// Holds `value`.
    public init(_ value: Value) { stored = value }

    /// The current value.
    public var value: Value { lock.withLock { stored } }

    /// Replaces the value.
    public func set(_ value: Value) { lock.withLock { stored = value } }

    /// Reads or changes the value in place, atomically; `body` must not call back into this lock.
    @discardableResult
    public func withValue<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try lock.withLock { try body(&stored) }
    }
}
