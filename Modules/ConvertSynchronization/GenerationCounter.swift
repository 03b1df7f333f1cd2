#if canImport(Synchronization)
import Synchronization
#endif

/// A number that grows whenever shared state changes, read without a lock: a reader that saw
/// the same number before may keep what it copied then, and takes a lock only when it moved.
///
/// A writer changes the state first and then calls ``advance()``; a reader loads ``value``
/// first and then copies the state, so a copy is never newer-numbered than what it holds.
package final class GenerationCounter: Sendable {
    #if canImport(Synchronization) && !canImport(Darwin)
    // Held directly where atomics need no availability check: a reader then calls nothing it
    // must keep an object alive for, so reading retains nothing another thread also counts on.
    @usableFromInline let number = Atomic<UInt64>(0)

    /// A counter at zero.
    package init() {}

    /// The current number.
    @inlinable
    package var value: UInt64 { number.load(ordering: .acquiring) }

    /// Moves the number on, after the state it guards has changed.
    package func advance() { number.add(1, ordering: .releasing) }
    #else
    private let storage: any CounterStorage

    /// A counter at zero.
    package init() {
        #if canImport(Synchronization)
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
            storage = AtomicCounterStorage()
            return
        }
        #endif
        storage = LockedCounterStorage()
    }

    /// The current number.
    @inline(__always)
    package var value: UInt64 { storage.load() }

    /// Moves the number on, after the state it guards has changed.
    package func advance() { storage.advance() }
    #endif
}

// Compiled everywhere (unused where atomics are held directly), so Linux type-checks it.
private protocol CounterStorage: AnyObject, Sendable {
    func load() -> UInt64
    func advance()
}

#if canImport(Synchronization)
@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
private final class AtomicCounterStorage: CounterStorage {
    private let number = Atomic<UInt64>(0)
    func load() -> UInt64 { number.load(ordering: .acquiring) }
    func advance() { number.add(1, ordering: .releasing) }
}
#endif

/// Where atomics are not available (Apple systems before 2024's): a lock, still correct.
private final class LockedCounterStorage: CounterStorage {
    private let number = Locked<UInt64>(0)
    func load() -> UInt64 { number.value }
    func advance() { number.withValue { $0 &+= 1 } }
}
