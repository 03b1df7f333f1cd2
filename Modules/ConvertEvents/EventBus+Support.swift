import ConvertSynchronization
import Foundation

/// Cancels exactly one subscription. Cancelling twice is harmless.
public final class SubscriptionToken: Sendable, Hashable {
    private let state: CancellationState
    private let remove: @Sendable () -> Void
    private let cancelled = Locked(false)

    init(state: CancellationState, remove: @escaping @Sendable () -> Void) {
        self.state = state
        self.remove = remove
    }

    /// Whether the subscription still delivers.
    public var isActive: Bool { !state.isCancelled }

    /// Stops delivery at once, even to a publish already under way, and removes the subscription.
    public func cancel() {
        let first = cancelled.withValue { cancelled in
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
final class CancellationState: Sendable {
    private let cancelled = Locked(false)

    var isCancelled: Bool { cancelled.value }

    func cancel() { cancelled.set(true) }
}

/// Lets exactly one caller through.
final class OnceGate: Sendable {
    private let delivered = Locked(false)

    func consumeFirstDelivery() -> Bool {
        delivered.withValue { delivered in
            guard !delivered else { return false }
            delivered = true
            return true
        }
    }
}

/// Holds a token that is created after the closure that cancels it.
final class TokenHolder: Sendable {
    private let state = Locked<(token: SubscriptionToken?, cancelRequested: Bool)>((nil, false))

    func set(_ token: SubscriptionToken) {
        let cancelNow = state.withValue { state in
            state.token = token
            return state.cancelRequested
        }
        if cancelNow { token.cancel() }
    }

    func cancel() {
        let token = state.withValue { state in
            state.cancelRequested = true
            return state.token
        }
        token?.cancel()
    }
}

/// A weak reference usable from any thread; the owner's lifetime decides the subscription's.
/// Off the main actor the bus only tests it for `nil` unless the owner's type is `Sendable`.
final class WeakBox: @unchecked Sendable {  // a weak reference: Swift loads and clears it atomically, the box has no other state
    private(set) weak var object: AnyObject?

    init(_ object: AnyObject) { self.object = object }
}

/// The lifetime anchor of a stream subscription, released when the stream ends.
final class StreamOwner: Sendable {
    // Keeps the owner alive until the stream terminates.
    private let anchor = Locked<StreamOwner?>(nil)

    init() { anchor.set(self) }

    func release() { anchor.set(nil) }
}

/// One subscription as the bus stores it. `receive` runs on every publishing thread, outside the
/// bus's lock, and several threads may run it at once: it is `@Sendable`, as are the handlers it
/// calls.
struct SubscriptionEntry: Sendable {
    let id: UUID
    let owner: WeakBox
    let state: CancellationState
    let receive: @Sendable (any EventBusEvent) -> Void

    var isLive: Bool { owner.object != nil && !state.isCancelled }
}
