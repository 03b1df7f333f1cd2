#if DEBUG
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Counts the lock acquisitions one thread makes inside ``counting(_:)``, so tests can check
/// how many locks a call takes. Debug builds only: release builds compile the counting out.
@usableFromInline
package enum LockTally {
    @usableFromInline
    static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// Adds one to the calling thread's count, when it is counting (for locks kept outside this
    /// module too: a context's `Mutex`).
    @inlinable
    package static func acquired() {
        guard let count = pthread_getspecific(key) else { return }
        count.assumingMemoryBound(to: Int.self).pointee += 1
    }

    /// Runs `body` and returns its result with the number of locks the calling thread took
    /// meanwhile (``Locked`` and ``StripedValue`` acquisitions).
    package static func counting<Result>(_ body: () throws -> Result) rethrows -> (result: Result, locks: Int) {
        let count = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        count.initialize(to: 0)
        let previous = pthread_getspecific(key)
        pthread_setspecific(key, count)
        defer {
            pthread_setspecific(key, previous)
            count.deallocate()
        }
        let result = try body()
        return (result, count.pointee)
    }
}
#endif
