#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value behind a lock: the one shape of shared mutable state in the SDK.
///
/// ```swift
/// let seen = Locked<[String]>([])
/// seen.withValue { $0.append("b") }
/// ```
///
/// Sendable where its value is: every access to the value goes through the lock. A plain
/// `pthread_mutex_t` of its own (one small allocation besides the object; `NSLock` costs two
/// more), inlinable so hot paths in other modules get a specialized call.
package final class Locked<Value> {
    // `stored` is read and written only with `mutex` held.
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline var stored: Value

    /// Holds `value`.
    @inlinable
    package init(_ value: Value) {
        stored = value
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        #if canImport(Glibc)
        // Held for a few hundred nanoseconds at most: spinning briefly before sleeping beats a
        // futex round trip when two threads meet on one (a store shard, a stripe).
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
        pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
        #else
        pthread_mutex_init(mutex, nil)
        #endif
    }

    @inlinable
    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// The current value.
    @inlinable
    package var value: Value { withValue { $0 } }

    /// Replaces the value.
    @inlinable
    package func set(_ value: Value) { withValue { $0 = value } }

    /// Reads or changes the value in place, atomically; `body` must not call back into this lock.
    @inlinable
    @discardableResult
    package func withValue<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try withMutexHeld(mutex) { try body(&stored) }
    }
}

/// `body` with `mutex` held (and, in debug builds, counted for ``LockTally``): the critical
/// section of every lock in this module.
@inlinable @inline(__always)
package func withMutexHeld<Result>(_ mutex: UnsafeMutablePointer<pthread_mutex_t>,
                                   _ body: () throws -> Result) rethrows -> Result {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    #if DEBUG
    LockTally.acquired()
    #endif
    return try body()
}

// Sound because every access to the value holds the lock; only a Sendable value may be handed
// between threads through it.
extension Locked: @unchecked Sendable where Value: Sendable {}
