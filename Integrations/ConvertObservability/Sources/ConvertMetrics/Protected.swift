#if canImport(Synchronization) && !canImport(Darwin)
import Synchronization

/// A value behind a lock. On Linux the lock is Synchronization's `Mutex`, which needs no
/// availability check there: every evaluation's counter lookup takes this lock, and under
/// contention `NSLock` (a plain pthread mutex that sleeps in the kernel) cost it about three times
/// as much.
final class Protected<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) {
        mutex = Mutex(value)
    }

    func withValue<Result: Sendable>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try mutex.withLock { value in try body(&value) }
    }
}
#else
import Foundation

/// A value behind a lock: every access holds it, which is what makes it `Sendable`
/// (`@unchecked`: the compiler cannot see the lock).
final class Protected<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withValue<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
#endif
