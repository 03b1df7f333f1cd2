import ConvertSynchronization
import Foundation

/// Marks a type as an event that can travel through an ``EventBus``.
///
/// ```swift
/// struct UserDidLogin: EventBusEvent { let userID: String }
/// ```
public protocol EventBusEvent: Sendable {}

/// A typed publish/subscribe hub: publish a value, and every live subscription to its type
/// receives it.
///
/// Subscriptions follow their owner's lifetime (the owner is held weakly) and can be cancelled
/// one by one with their ``SubscriptionToken``. Publishing takes a snapshot of the subscribers
/// under a lock and calls them after releasing it, synchronously on the publishing thread: any
/// thread may publish, and several may at once, so handlers are `@Sendable` and an owner handed
/// to one is `Sendable`. ``subscribeOnMain(owner:to:handler:)`` hops to the main actor instead,
/// and ``stream(_:bufferingPolicy:)`` delivers into an `AsyncStream`.
///
/// ```swift
/// let bus = EventBus()
/// bus.subscribe(owner: self, to: UserDidLogin.self) { owner, event in owner.reload(event.userID) }
/// bus.publish(UserDidLogin(userID: "42"))
/// ```
public final class EventBus: Sendable {
    // Handlers run outside the lock.
    private let subscriptionsByEvent = Locked<[ObjectIdentifier: [SubscriptionEntry]]>([:])

    /// A bus of its own, with no subscriptions.
    public init() {}

    /// One bus for the whole process, for components that share events without being handed a
    /// bus (`init(eventBus: EventBus = .default)`).
    public static let `default` = EventBus()

    /// Delivers `event` to every live subscription of its type.
    public func publish<Event: EventBusEvent>(_ event: Event) {
        let key = ObjectIdentifier(Event.self)
        let receivers: [@Sendable (any EventBusEvent) -> Void] = subscriptionsByEvent.withValue { subscriptions in
            guard let bucket = subscriptions[key] else { return [] }
            let live = bucket.filter(\.isLive)
            subscriptions[key] = live.isEmpty ? nil : live
            return live.map(\.receive)
        }
        for receive in receivers { receive(event) }
    }

    /// Subscribes `handler` to `eventType` for as long as `owner` lives; the handler receives the
    /// owner strongly, so it needs no `[weak self]`. It runs on the publishing thread, so the
    /// owner it is handed is `Sendable` (a main-actor owner subscribes with
    /// ``subscribeOnMain(owner:to:handler:)``).
    @discardableResult
    public func subscribe<Owner: AnyObject & Sendable, Event: EventBusEvent>(
        owner: Owner, to eventType: Event.Type = Event.self, handler: @escaping @Sendable (Owner, Event) -> Void
    ) -> SubscriptionToken {
        let state = CancellationState()
        let box = WeakBox(owner)
        return insert(Event.self, owner: box, state: state) { raw in
            guard !state.isCancelled, let owner = box.object as? Owner, let event = raw as? Event else { return }
            handler(owner, event)
        }
    }

    /// Subscribes an event-only `handler`; `owner` only anchors the subscription's lifetime (it
    /// is never handed to the handler, so it need not be `Sendable`).
    @discardableResult
    public func subscribe<Owner: AnyObject, Event: EventBusEvent>(
        owner: Owner, to eventType: Event.Type = Event.self, handler: @escaping @Sendable (Event) -> Void
    ) -> SubscriptionToken {
        let state = CancellationState()
        let box = WeakBox(owner)
        return insert(Event.self, owner: box, state: state) { raw in
            guard !state.isCancelled, box.object != nil, let event = raw as? Event else { return }
            handler(event)
        }
    }

    /// Subscribes `handler` for exactly one delivery, even when several publishes race; like the
    /// owner-receiving `subscribe(owner:to:handler:)`, it runs on the publishing thread.
    @discardableResult
    public func subscribeOnce<Owner: AnyObject & Sendable, Event: EventBusEvent>(
        owner: Owner, to eventType: Event.Type = Event.self, handler: @escaping @Sendable (Owner, Event) -> Void
    ) -> SubscriptionToken {
        let gate = OnceGate()
        let holder = TokenHolder()
        let token = subscribe(owner: owner, to: eventType) { (owner: Owner, event: Event) in
            guard gate.consumeFirstDelivery() else { return }
            holder.cancel()
            handler(owner, event)
        }
        holder.set(token)
        return token
    }

    /// Subscribes `handler` to run on the main actor; delivery is scheduled asynchronously. The
    /// owner is handed to the handler only there, on the actor it was subscribed from.
    @MainActor @discardableResult
    public func subscribeOnMain<Owner: AnyObject, Event: EventBusEvent>(
        owner: Owner, to eventType: Event.Type = Event.self,
        handler: @escaping @MainActor (Owner, Event) -> Void
    ) -> SubscriptionToken {
        let state = CancellationState()
        let box = WeakBox(owner)
        return insert(Event.self, owner: box, state: state) { raw in
            guard !state.isCancelled, let event = raw as? Event else { return }
            Task { @MainActor in
                guard !state.isCancelled, let owner = box.object as? Owner else { return }
                handler(owner, event)
            }
        }
    }

    /// The events of `eventType` as an async sequence, buffered by `bufferingPolicy` (the newest
    /// 100 by default). The subscription ends when the stream terminates.
    public func stream<Event: EventBusEvent>(
        _ eventType: Event.Type = Event.self,
        bufferingPolicy: AsyncStream<Event>.Continuation.BufferingPolicy = .bufferingNewest(100)
    ) -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: bufferingPolicy)
        let owner = StreamOwner()
        let token = subscribe(owner: owner, to: eventType) { (event: Event) in
            continuation.yield(event)
        }
        continuation.onTermination = { _ in
            token.cancel()
            owner.release()
        }
        return stream
    }

    /// Cancels every subscription of `owner` to `eventType`.
    public func unsubscribe<Owner: AnyObject, Event: EventBusEvent>(owner: Owner, from eventType: Event.Type = Event.self) {
        let key = ObjectIdentifier(Event.self)
        subscriptionsByEvent.withValue { subscriptions in
            subscriptions[key] = Self.removing(owner, from: subscriptions[key])
        }
    }

    /// Cancels every subscription of `owner`, whatever its event type.
    public func unsubscribeAll(for owner: AnyObject) {
        subscriptionsByEvent.withValue { subscriptions in
            for key in Array(subscriptions.keys) {
                subscriptions[key] = Self.removing(owner, from: subscriptions[key])
            }
        }
    }

    /// The number of live subscriptions to `eventType` (dead ones are cleaned up first).
    package func subscriberCount<Event: EventBusEvent>(for eventType: Event.Type) -> Int {
        let key = ObjectIdentifier(Event.self)
        return subscriptionsByEvent.withValue { subscriptions in
            let live = (subscriptions[key] ?? []).filter(\.isLive)
            subscriptions[key] = live.isEmpty ? nil : live
            return live.count
        }
    }

    private static func removing(_ owner: AnyObject, from bucket: [SubscriptionEntry]?) -> [SubscriptionEntry]? {
        guard let bucket else { return nil }
        var kept: [SubscriptionEntry] = []
        for entry in bucket {
            if entry.owner.object === owner {
                entry.state.cancel()
            } else if entry.isLive {
                kept.append(entry)
            }
        }
        return kept.isEmpty ? nil : kept
    }

    private func insert<Event: EventBusEvent>(_: Event.Type, owner: WeakBox, state: CancellationState,
                                               receive: @escaping @Sendable (any EventBusEvent) -> Void) -> SubscriptionToken {
        let key = ObjectIdentifier(Event.self)
        let entry = SubscriptionEntry(id: UUID(), owner: owner, state: state, receive: receive)
        subscriptionsByEvent.withValue { subscriptions in
            var bucket = (subscriptions[key] ?? []).filter(\.isLive)
            bucket.append(entry)
            subscriptions[key] = bucket
        }
        let id = entry.id
        return SubscriptionToken(state: state) { [weak self] in
            self?.subscriptionsByEvent.withValue { subscriptions in
                let kept = (subscriptions[key] ?? []).filter { $0.id != id }
                subscriptions[key] = kept.isEmpty ? nil : kept
            }
        }
    }
}
