import Dispatch
import Foundation

/// Cancels one ``SystemEventHub`` subscription (``SystemEventHub/off(_:)``).
public struct EventListenerToken: Sendable, Hashable {
    let id: UUID
}

/// Where system event callbacks run.
public enum EventDelivery: Sendable {
    /// On a serial queue of the subscription's own, off the main thread: works in a server
    /// process whose main thread is busy, and a slow callback delays only itself.
    case background
    /// On the main actor, for UI code.
    case mainActor
}

/// The SDK's system events, carried on a typed ``EventBus``: anyone may subscribe, only the
/// SDK's own modules may fire.
///
/// Callbacks never run on the firing thread, so a slow or misbehaving subscriber cannot stall a
/// decision or another subscriber; each subscription receives its events in firing order.
public final class SystemEventHub: @unchecked Sendable {
    // `listeners` and `counts` are guarded by `lock`.
    private let lock = NSLock()
    private let bus: EventBus
    private var listeners: [EventListenerToken: Listener] = [:]
    private var counts = [Int](repeating: 0, count: SystemEvent.allCases.count)

    /// Creates a hub on its own bus, or on `bus` to share one with the app.
    public init(bus: EventBus = EventBus()) {
        self.bus = bus
    }

    /// Subscribes `callback` to `event`.
    @discardableResult
    public func on(_ event: SystemEvent, delivery: EventDelivery = .background,
                   callback: @escaping @Sendable (EventPayloadValue) -> Void) -> EventListenerToken {
        let token = EventListenerToken(id: UUID())
        let listener = Listener(event: event, delivery: delivery, callback: callback)
        lock.withLock {
            listeners[token] = listener
            counts[event.index] += 1
        }
        listener.subscription = bus.subscribe(owner: listener, to: SystemEventEnvelope.self) { (owner: Listener, envelope: SystemEventEnvelope) in
            owner.deliver(envelope.payload)
        }
        return token
    }

    /// Cancels the subscription `token` names; unknown or already cancelled tokens are ignored.
    public func off(_ token: EventListenerToken) {
        let listener: Listener? = lock.withLock {
            guard let listener = listeners.removeValue(forKey: token) else { return nil }
            counts[listener.event.index] -= 1
            return listener
        }
        listener?.cancel()
    }

    /// The number of active subscriptions.
    public var listenerCount: Int { lock.withLock { listeners.count } }

    /// Whether anyone listens to `event`.
    public func hasListeners(_ event: SystemEvent) -> Bool {
        lock.withLock { counts[event.index] > 0 }
    }

    /// Announces `event`; the payload is built only when someone listens. Only the SDK's
    /// modules fire.
    package func fire(_ event: SystemEvent, _ payload: @autoclosure () -> EventPayloadValue) {
        guard hasListeners(event) else { return }
        bus.publish(SystemEventEnvelope(payload: payload()))
    }
}

/// A system event as it travels on the typed bus (internal, so only the hub subscribes to it).
struct SystemEventEnvelope: EventBusEvent {
    let payload: EventPayloadValue
}

extension SystemEvent {
    /// The event's position in `allCases`.
    var index: Int {
        switch self {
        case .ready: return 0
        case .configUpdated: return 1
        case .apiQueueReleased: return 2
        case .bucketing: return 3
        case .conversion: return 4
        case .segments: return 5
        case .locationActivated: return 6
        case .locationDeactivated: return 7
        case .audiences: return 8
        case .dataStoreQueueReleased: return 9
        }
    }
}

private final class Listener: @unchecked Sendable {
    // `subscription` is set once right after creation, before any event can reach this listener
    // through the hub; `cancelled` is guarded by `lock`.
    let event: SystemEvent
    let delivery: EventDelivery
    let callback: @Sendable (EventPayloadValue) -> Void
    let queue = DispatchQueue(label: "convert.system-event")
    var subscription: SubscriptionToken?
    private let lock = NSLock()
    private var cancelled = false

    init(event: SystemEvent, delivery: EventDelivery, callback: @escaping @Sendable (EventPayloadValue) -> Void) {
        self.event = event
        self.delivery = delivery
        self.callback = callback
    }

    var isCancelled: Bool { lock.withLock { cancelled } }

    func cancel() {
        lock.withLock { cancelled = true }
        subscription?.cancel()
    }

    func deliver(_ payload: EventPayloadValue) {
        guard payload.event == event, !isCancelled else { return }
        let callback = self.callback
        switch delivery {
        case .background:
            queue.async { [self] in
                guard !isCancelled else { return }
                callback(payload)
            }
        case .mainActor:
            Task { @MainActor [self] in
                guard !isCancelled else { return }
                callback(payload)
            }
        }
    }
}
