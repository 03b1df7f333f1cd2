import ConvertCore
import ConvertEnvironment
import ConvertEvents
import ConvertSynchronization
import Foundation

/// Subscribes to system events and keeps what arrives, with a way to wait for deliveries.
///
/// ```swift
/// let recorder = await EventRecorder(sdk, events: [.bucketing])
/// _ = await context.runExperience("x")
/// let payloads = try await recorder.wait(for: .bucketing, count: 1)
/// ```
public final class EventRecorder: Sendable {
    private let received: Locked<[EventPayloadValue]>
    private let tokens: [EventListenerToken]

    /// Subscribes to `events` (all ten when omitted) on `sdk`.
    public init(_ sdk: ConvertSwiftSDK, events: [SystemEvent] = SystemEvent.allCases) async {
        let received = Locked<[EventPayloadValue]>([])
        var tokens: [EventListenerToken] = []
        for event in events {
            // Weak: once the recorder is gone, late deliveries are dropped rather than kept.
            tokens.append(await sdk.on(event) { [weak received] payload in received?.withValue { $0.append(payload) } })
        }
        self.received = received
        self.tokens = tokens
    }

    /// Every payload received so far, in arrival order.
    public var payloads: [EventPayloadValue] { received.value }

    /// The payloads of one event.
    public func payloads(of event: SystemEvent) -> [EventPayloadValue] {
        payloads.filter { $0.event == event }
    }

    /// Waits until `count` payloads of `event` arrived (or `timeout` passes) and returns them.
    @discardableResult
    public func wait(for event: SystemEvent, count: Int = 1, timeout: Duration = .patience) async throws -> [EventPayloadValue] {
        let deadline = ContinuousClock.now + timeout
        while true {
            // Checked once more after the deadline: a starved test thread may wake past it
            // with the payloads long arrived.
            let found = payloads(of: event)
            if found.count >= count { return found }
            guard ContinuousClock.now < deadline else { break }
            try await Task.sleep(for: .milliseconds(2))
        }
        throw WaitTimeout(event: event, expected: count, received: payloads(of: event).count)
    }

    /// Waits a moment for stragglers and returns the payloads of `event`.
    public func settled(_ event: SystemEvent, after delay: Duration = .milliseconds(50)) async -> [EventPayloadValue] {
        try? await Task.sleep(for: delay)
        return payloads(of: event)
    }

    /// Cancels the subscriptions.
    public func stop(_ sdk: ConvertSwiftSDK) async {
        for token in tokens { await sdk.off(token) }
    }

    /// A wait that ran out.
    public struct WaitTimeout: Error, CustomStringConvertible {
        /// The event waited for.
        public let event: SystemEvent
        /// How many were expected.
        public let expected: Int
        /// How many had arrived when the wait ran out.
        public let received: Int

        public var description: String { "waited for \(expected) \(event.rawValue) event(s), got \(received)" }
    }
}
