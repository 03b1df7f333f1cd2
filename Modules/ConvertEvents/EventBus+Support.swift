import Foundation

/// Cancels exactly one subscription. Cancelling twice is harmless.
public final class SubscriptionToken: @unchecked Sendable, Hashable {
    // `cancelled` is guarded by `lock`.
    private let lock = NSLock()
    private let state: CancellationState
    private let remove: @Sendable () -> Void
    private var cancelled = false

    init(state: CancellationState, remove: @escaping @Sendable () -> Void) {
        self.state = state
        self.remove = remove
    }

    /// Whether the subscription still delivers.
    public var isActive: Bool { !state.isCancelled }

    /// Stops delivery at once, even to a publish already under way, and removes the subscription.
    public func cancel() {
        let first = lock.withLock {
            defer { cancelled = true }
            return !cancelled
        }
        guard first else { return }
        state.cancel()
        remove()
    }

    public static func == (lhs: SubscriptionToken, rhs: SubscriptionToken) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// A flag shared by a subscription and its token, checked before every delivery.
final class CancellationState: @unchecked Sendable {
    // `cancelled` is guarded by `lock`.
    private let lock = NSLock()
    private var cancelled = false

    var isCancelled: Bool { lock.withLock { cancelled } }

    func cancel() { lock.withLock { cancelled = true } }
}

/// Lets exactly one caller through.
final class OnceGate: @unchecked Sendable {
    // `delivered` is guarded by `lock`.
    private let lock = NSLock()
    private var delivered = false

    func consumeFirstDelivery() -> Bool {
        lock.withLock {
            guard !delivered else { return false }
            delivered = true
            return true
        }
    }
}

/// Holds a token that is created after the closure that cancels it.
final class TokenHolder: @unchecked Sendable {
    // `token` and `cancelRequested` are guarded by `lock`.
    private let lock = NSLock()
    private var token: SubscriptionToken?
    private var cancelRequested = false

    func set(_ token: SubscriptionToken) {
        let cancelNow = lock.withLock {
            self.token = token
            return cancelRequested
        }
        if cancelNow { token.cancel() }
    }

    func cancel() {
        let token = lock.withLock {
            cancelRequested = true
            return self.token
        }
        token?.cancel()
    }
}

/// A weak reference usable from any thread; the owner's lifetime decides the subscription's.
final class WeakBox: @unchecked Sendable {
    // Swift weak references are atomic; the box adds no mutable state of its own.
    private(set) weak var object: AnyObject?

    init(_ object: AnyObject) { self.object = object }
}

/// The lifetime anchor of a stream subscription, released when the stream ends.
final class StreamOwner: @unchecked Sendable {
    // `anchor` is guarded by `lock`; it keeps the owner alive until the stream terminates.
    private let lock = NSLock()
    private var anchor: StreamOwner?

    init() { anchor = self }

    func release() { lock.withLock { anchor = nil } }
}

/// Carries a main-actor handler into a `@MainActor` task.
struct MainActorHandler<Owner, Event>: @unchecked Sendable {
    // Only ever called on the main actor, where it was created.
    let call: @MainActor (Owner, Event) -> Void

    init(_ call: @escaping @MainActor (Owner, Event) -> Void) { self.call = call }
}

struct SubscriptionEntry {
    let id: UUID
    let owner: WeakBox
    let state: CancellationState
    let receive: (Any) -> Void

    var isLive: Bool { owner.object != nil && !state.isCancelled }
}
