#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(Synchronization) && !canImport(Darwin)
import Synchronization
#endif

/// A value and its lock stored inline in the object that holds it, for objects made by the
/// thousand (a context per request): ``Locked`` costs a second allocation and a mutex set-up.
///
/// Where the standard library's `Mutex` needs no availability check (Linux) it is the lock, so
/// the holder stays one allocation; on Apple platforms, where `Mutex` needs macOS 15 / iOS 18,
/// value and mutex share one buffer.
///
/// ```swift
/// let state = InlineLocked.holding([String: Int]())
/// state.withValue { $0["seen", default: 0] += 1 }
/// ```
#if canImport(Synchronization) && !canImport(Darwin)
// The standard library's type itself, not a wrapper: a generic wrapper around it is not
// specialised across modules, and each call then looks up the lock's generic metadata.
package typealias InlineLocked<Value> = Mutex<Value>

extension Mutex {
    /// A lock holding `value` (the one way to make one, on every platform).
    @inlinable
    package static func holding(_ value: consuming sending Value) -> Mutex<Value> {
        Mutex(value)
    }

    /// Reads or changes the value in place, atomically; `body` must not call back into this lock.
    @inlinable @inline(__always)
    package borrowing func withValue<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result
    where Value: Sendable {
        // The closure is the lock's own: its value never leaves the critical section.
        try withLock { (value: inout sending Value) throws -> sending Result in
            #if DEBUG
            LockTally.acquired()
            #endif
            return try body(&value)
        }
    }
}
#else
package struct InlineLocked<Value: Sendable> {
    // The value is the buffer's header and the mutex its one element.
    @usableFromInline
    final class Storage: ManagedBuffer<Value, pthread_mutex_t> {
        deinit {
            withUnsafeMutablePointerToElements { mutex in
                pthread_mutex_destroy(mutex)
                mutex.deinitialize(count: 1)
            }
        }
    }

    @usableFromInline let storage: Storage

    /// A lock holding `value` (the one way to make one, on every platform).
    @inlinable
    package static func holding(_ value: consuming Value) -> InlineLocked<Value> {
        InlineLocked(value)
    }

    @inlinable
    init(_ value: consuming Value) {
        var pending = Optional(value)
        storage = unsafeDowncast(Storage.create(minimumCapacity: 1) { _ in pending.take()! }, to: Storage.self)
        storage.withUnsafeMutablePointerToElements { mutex in
            mutex.initialize(to: pthread_mutex_t())
            pthread_mutex_init(mutex, nil)
        }
    }

    /// Reads or changes the value in place, atomically; `body` must not call back into this lock.
    @inlinable @inline(__always)
    package func withValue<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try storage.withUnsafeMutablePointers { value, mutex in
            try withMutexHeld(mutex) { try body(&value.pointee) }
        }
    }
}

// Sound because every access to the value holds the lock; only a Sendable value may be handed
// between threads through it.
extension InlineLocked: @unchecked Sendable {}
#endif
