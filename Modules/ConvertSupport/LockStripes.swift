#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A fixed set of mutexes shared by many small objects, chosen by a hash: guarding an object's
/// few fields costs no allocation per object (an `NSLock` costs several), which matters for
/// objects created once per request. Critical sections must be short and must not nest.
package final class LockStripes: @unchecked Sendable {
    package static let shared = LockStripes(count: 64)

    // Each mutex sits on its own cache line so neighbouring stripes do not contend.
    private static let stride = 64
    private let base: UnsafeMutableRawPointer
    private let mask: Int

    /// `count` is rounded up to a power of two.
    package init(count: Int) {
        var size = 1
        while size < count { size <<= 1 }
        mask = size - 1
        precondition(MemoryLayout<pthread_mutex_t>.size <= Self.stride)
        base = UnsafeMutableRawPointer.allocate(byteCount: size * Self.stride, alignment: Self.stride)
        for i in 0..<size {
            let mutex = (base + i * Self.stride).bindMemory(to: pthread_mutex_t.self, capacity: 1)
            mutex.initialize(to: pthread_mutex_t())
            pthread_mutex_init(mutex, nil)
        }
    }

    deinit {
        for i in 0...mask { pthread_mutex_destroy(mutex(i)) }
        base.deallocate()
    }

    private func mutex(_ stripe: Int) -> UnsafeMutablePointer<pthread_mutex_t> {
        (base + (stripe & mask) * Self.stride).assumingMemoryBound(to: pthread_mutex_t.self)
    }

    /// Runs `body` holding the stripe chosen by `hash`.
    @inline(__always)
    package func withLock<Result>(_ hash: UInt64, _ body: () throws -> Result) rethrows -> Result {
        let m = mutex(Int(truncatingIfNeeded: hash >> 7))
        pthread_mutex_lock(m)
        defer { pthread_mutex_unlock(m) }
        return try body()
    }
}
