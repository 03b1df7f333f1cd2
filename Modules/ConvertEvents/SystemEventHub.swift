import ConvertSynchronization
import Dispatch
import Foundation

/// Cancels one ``SystemEventHub`` subscription (``SystemEventHub/unsubscribe(_:)``).
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
public final class SystemEventHub: Sendable {
    private struct State {
        var listeners: [EventListenerToken: Listener] = [:]
        /// Active listeners per event, by `SystemEvent.index`.
        var counts = [Int](repeating: 0, count: SystemEvent.allCases.count)
        /// Told the listening mask whenever it changes.
        var observers: [@Sendable (UInt32) -> Void] = []
    }

    private let bus: EventBus
    private let state = Locked(State())
    /// Bit `event.index` set while `event` has listeners; read on every fire, from the stripe of
    /// the firing thread, so deciding threads share no lock here (written under `state`).
    private let listening = StripedValue<UInt32>(0)

    /// Creates a hub on its own bus, or on `bus` to share one with the app.
    public init(bus: EventBus = EventBus()) {
        self.bus = bus
    }

    /// Subscribes `callback` to `event`.
    @discardableResult
    public func subscribe(to event: SystemEvent, delivery: EventDelivery = .background,
                          callback: @escaping @Sendable (EventPayloadValue) -> Void) -> EventListenerToken {
        let token = EventListenerToken(id: UUID())
        let listener = Listener(event: event, delivery: delivery, callback: callback)
        state.withValue { state in
            state.listeners[token] = listener
            state.counts[event.index] += 1
            publishListening(state)
        }
        let subscription = bus.subscribe(owner: listener, to: SystemEventEnvelope.self) { (owner: Listener, envelope: SystemEventEnvelope) in
            owner.deliver(envelope.payload)
        }
        listener.subscribed(subscription)
        return token
    }

    /// Cancels the subscription `token` names; unknown or already cancelled tokens are ignored.
    public func unsubscribe(_ token: EventListenerToken) {
        let listener: Listener? = state.withValue { state in
            guard let listener = state.listeners.removeValue(forKey: token) else { return nil }
            state.counts[listener.event.index] -= 1
            publishListening(state)
            return listener
        }
        listener?.cancel()
    }

    /// The number of active subscriptions.
    package var listenerCount: Int { state.withValue { $0.listeners.count } }

    /// Whether anyone listens to `event`.
    package func hasListeners(_ event: SystemEvent) -> Bool {
        listening.readOnThisThread { $0 & (1 << UInt32(event.index)) != 0 }
    }

    /// Called with the state lock held, so observers learn the masks in order.
    private func publishListening(_ state: State) {
        let mask = Self.mask(state.counts)
        listening.update { $0 = mask }
        for observer in state.observers { observer(mask) }
    }

    private static func mask(_ counts: [Int]) -> UInt32 {
        var mask: UInt32 = 0
        for (index, count) in counts.enumerated() where count > 0 { mask |= 1 << UInt32(index) }
        return mask
    }

    /// Calls `observer` with the mask of events that have listeners (bit `event.index`), now and
    /// after every change, with the hub's lock held: a decision path keeps its own copy and
    /// fires through ``publish(_:listening:_:)`` without reading the hub's stripes.
    package func observeListening(_ observer: @escaping @Sendable (UInt32) -> Void) {
        state.withValue { state in
            state.observers.append(observer)
            observer(Self.mask(state.counts))
        }
    }

    /// Whether `listening` (a mask ``observeListening(_:)`` gave) has the bit of `event`.
    @inline(__always)
    package static func listens(_ listening: UInt32, to event: SystemEvent) -> Bool {
        listening & (1 << UInt32(event.index)) != 0
    }

    /// Announces `event` when `listening` (a mask ``observeListening(_:)`` gave) has its bit.
    @inline(__always)
    package func publish(_ event: SystemEvent, listening: UInt32, _ payload: @autoclosure () -> EventPayloadValue) {
        guard listening & (1 << UInt32(event.index)) != 0 else { return }
        bus.publish(SystemEventEnvelope(payload: payload()))
    }

    /// Announces `event`; the payload is built only when someone listens. Only the SDK's
    /// modules fire.
    package func publish(_ event: SystemEvent, _ payload: @autoclosure () -> EventPayloadValue) {
        guard hasListeners(event) else { return }
        bus.publish(SystemEventEnvelope(payload: payload()))
    }

    /// What a tracking queue calls with each acknowledged batch's size to announce
    /// `api.queue.released` here (`TrackingQueue(…, released: hub.queueReleased)` in a build
    /// composed by hand).
    public var queueReleased: @Sendable (Int) -> Void {
        { [self] count in publish(.apiQueueReleased, .apiQueueReleased(ApiQueueReleasedPayload(eventCount: count))) }
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

private final class Listener: Sendable {
    private struct State {
        /// Set once right after creation, before the hub hands out the listener's token.
        var subscription: SubscriptionToken?
        var cancelled = false
    }

    let event: SystemEvent
    let delivery: EventDelivery
    let callback: @Sendable (EventPayloadValue) -> Void
    let queue = DispatchQueue(label: "convert.system-event")
    private let state = Locked(State())

    init(event: SystemEvent, delivery: EventDelivery, callback: @escaping @Sendable (EventPayloadValue) -> Void) {
        self.event = event
        self.delivery = delivery
        self.callback = callback
    }

    var isCancelled: Bool { state.withValue { $0.cancelled } }

    func subscribed(_ subscription: SubscriptionToken) {
        state.withValue { $0.subscription = subscription }
    }

    func cancel() {
        let subscription = state.withValue { state in
            state.cancelled = true
            return state.subscription
        }
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
