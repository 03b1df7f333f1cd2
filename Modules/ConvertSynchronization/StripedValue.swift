#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value read far more often than written, kept once per stripe: a reader locks only the
/// stripe its hash chooses, so threads reading for different keys share no lock; a writer
/// sets every stripe in turn. Each stripe sits on cache lines of its own.
package final class StripedValue<Value> {
    // Every stripe's value is read and written only with that stripe's mutex held.
    private static var stride: Int {
        let raw = MemoryLayout<pthread_mutex_t>.stride + MemoryLayout<Value>.stride
        return (raw + 127) & ~127
    }
    private let base: UnsafeMutableRawPointer
    private let mask: Int

    /// `count` stripes (rounded up to a power of two), each holding `value`.
    package init(_ value: Value, stripes count: Int = 64) {
        var size = 1
        while size < count { size <<= 1 }
        mask = size - 1
        base = UnsafeMutableRawPointer.allocate(byteCount: size * Self.stride, alignment: 128)
        for i in 0..<size {
            let mutex = (base + i * Self.stride).bindMemory(to: pthread_mutex_t.self, capacity: 1)
            mutex.initialize(to: pthread_mutex_t())
            pthread_mutex_init(mutex, nil)
            slot(i).initialize(to: value)
        }
    }

    deinit {
        for i in 0...mask {
            pthread_mutex_destroy(mutex(i))
            slot(i).deinitialize(count: 1)
        }
        base.deallocate()
    }

    @inline(__always)
    private func mutex(_ stripe: Int) -> UnsafeMutablePointer<pthread_mutex_t> {
        (base + stripe * Self.stride).assumingMemoryBound(to: pthread_mutex_t.self)
    }

    @inline(__always)
    private func slot(_ stripe: Int) -> UnsafeMutablePointer<Value> {
        (base + stripe * Self.stride + MemoryLayout<pthread_mutex_t>.stride).assumingMemoryBound(to: Value.self)
    }

    /// Reads the value through the stripe chosen by `hash`.
    @inline(__always)
    package func read<Result>(_ hash: UInt64, _ body: (Value) throws -> Result) rethrows -> Result {
        try read(stripe: Int(truncatingIfNeeded: hash >> 7) & mask, body)
    }

    /// ``read(_:_:)`` in the calling thread's stripe: threads running together read different
    /// stripes (up to the stripe count).
    package func readOnThisThread<Result>(_ body: (Value) throws -> Result) rethrows -> Result {
        try read(stripe: Int(truncatingIfNeeded: currentThreadNumber()) & mask, body)
    }

    @inline(__always)
    private func read<Result>(stripe: Int, _ body: (Value) throws -> Result) rethrows -> Result {
        try withMutexHeld(mutex(stripe)) { try body(slot(stripe).pointee) }
    }

    /// Changes the value in every stripe with `body`; each stripe's copy is changed alike.
    package func update(_ body: (inout Value) -> Void) {
        for stripe in 0...mask {
            withMutexHeld(mutex(stripe)) { body(&slot(stripe).pointee) }
        }
    }
}

/// A number of the calling thread's own, handed out in the order threads first ask (from 1):
/// threads started one after another have consecutive numbers, so stripes chosen by it keep
/// them apart, where a hash of their ids may pick one stripe for two of them.
package func currentThreadNumber() -> UInt {
    if let raw = pthread_getspecific(threadNumberKey) { return UInt(bitPattern: raw) }
    let number = nextThreadNumber.withValue { next -> UInt in
        next &+= 1
        return next
    }
    pthread_setspecific(threadNumberKey, UnsafeRawPointer(bitPattern: number))
    return number
}

// The number is kept as the key's value itself, so there is nothing to free when a thread ends.
private let threadNumberKey: pthread_key_t = {
    var key = pthread_key_t()
    precondition(pthread_key_create(&key, nil) == 0, "no thread-specific key left")
    return key
}()
private let nextThreadNumber = Locked<UInt>(0)

// Sound because every stripe's value is read and written with that stripe's mutex held.
extension StripedValue: @unchecked Sendable where Value: Sendable {}
