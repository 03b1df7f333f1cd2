import Foundation

/// A value behind a lock: the one shape of shared mutable state in the SDK.
///
/// ```swift
/// let seen = Locked<[String]>([])
/// seen.withValue { $0.append("b") }
/// ```
///
/// The `@unchecked Sendable` is sound because every access to the value goes through the lock.
/// Inlinable, so hot paths in other modules (the memory visitor store) get a specialized call.
public final class Locked<Value>: @unchecked Sendable {
    // `stored` is guarded by `lock`.
    @usableFromInline let lock = NSLock()
    @usableFromInline var stored: Value

    /// Holds `value`.
    @inlinable
    public init(_ value: Value) { stored = value }

    /// The current value.
    @inlinable
    public var value: Value { lock.withLock { stored } }

    /// Replaces the value.
    @inlinable
    public func set(_ value: Value) { lock.withLock { stored = value } }

    /// Reads or changes the value in place, atomically; `body` must not call back into this lock.
    @inlinable
    @discardableResult
    public func withValue<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try lock.withLock { try body(&stored) }
    }
}
