#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value and the mutex guarding it in one allocation, for objects made by the thousand (a
/// context per request): ``Locked`` costs a second allocation for its mutex, and its spinning
/// mutex four calls to set up, where a lock nobody else waits for needs neither. A copy shares
/// the value and the lock, as a reference would.
///
/// ```swift
/// let state = InlineLocked([String: Int]())
/// state.withValue { $0["seen", default: 0] += 1 }
/// ```
public struct InlineLocked<Value> {
    // The value is the buffer's header and the mutex its one element. Inlinable, so a client
    // creates its specialised buffer without a generic-metadata lookup per instance.
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

    /// Holds `value`.
    @inlinable
    public init(_ value: consuming Value) {
        // Moved into the buffer, not copied (a copy retains every reference the value holds).
        var pending = Optional(value)
        storage = unsafeDowncast(Storage.create(minimumCapacity: 1) { _ in pending.take()! }, to: Storage.self)
        storage.withUnsafeMutablePointerToElements { mutex in
            mutex.initialize(to: pthread_mutex_t())
            pthread_mutex_init(mutex, nil)
        }
    }

    /// Reads or changes the value in place, atomically; `body` must not call back into this lock.
    @inlinable @inline(__always)
    public func withValue<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try storage.withUnsafeMutablePointers { value, mutex in
            try withMutexHeld(mutex) { try body(&value.pointee) }
        }
    }
}

// Sound because every access to the value holds the mutex; only a Sendable value may be handed
// between threads through it.
extension InlineLocked: @unchecked Sendable where Value: Sendable {}
