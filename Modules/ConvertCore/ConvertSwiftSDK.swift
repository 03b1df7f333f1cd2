import ConvertEnvironment
import ConvertEvents
import ConvertTracking
import ConvertModel
import ConvertRules
import ConvertStorage
import ConvertSynchronization
import Foundation

/// The SDK: holds the config, hands out visitor contexts, announces what happens.
///
/// Create one per process. Construction returns at once; the config loads in the background and
/// ``ready()`` tells when decisions can be made.
///
/// ```swift
/// let sdk = ConvertSwiftSDK(configuration: config, ports: ports)
/// try await sdk.ready(timeout: .seconds(5))
/// let context = sdk.createContext(visitorId: "visitor-42", attributes: ["plan": "premium"])
/// let variation = context.variation(forExperience: "checkout-test")
/// ```
public final class ConvertSwiftSDK: Sendable {
    let runtime: SDKRuntime
    private let loader: Task<Void, Never>
    /// Run when the SDK is released, for what is kept beside it (an app connection).
    private let releaseHandlers = Locked<[@Sendable () -> Void]>([])

    /// Starts an SDK on the given ports; nothing here imports a concrete adapter.
    public init(configuration: ConvertConfiguration, ports: ConvertPorts) {
        let runtime = SDKRuntime(configuration: configuration, ports: ports)
        let launched = configuration.readsLaunchOverrides ? DecisionOverrides.fromLaunch() : DecisionOverrides()
        if !launched.isEmpty {
            runtime.setOverrides(launched)
            runtime.log.warn("QA overrides from \(DecisionOverrides.environmentVariable) or \(DecisionOverrides.launchArgument): "
                          + "\(launched.all.variations.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", "))")
        }
        self.runtime = runtime
        loader = Task.detached { await runtime.runConfigSource() }
    }

    deinit {
        loader.cancel()
        runtime.watchers.close()
        // Contexts may outlive the SDK; their later tracking events are refused, not queued
        // behind a loop nobody will run.
        runtime.ports.trackingSink.stop()
        for handler in releaseHandlers.value { handler() }
    }

    /// Runs `handler` when the SDK is released (in its `deinit`, where weak references to it
    /// already read `nil`).
    package func whenReleased(_ handler: @escaping @Sendable () -> Void) {
        releaseHandlers.withValue { $0.append(handler) }
    }

    /// ``flush(timeout:)`` as a function that holds what it flushes but not the SDK, for work
    /// that must not keep the SDK alive.
    package var queueFlusher: @Sendable (Duration) async -> Bool {
        { [runtime] timeout in await runtime.releaseQueues(timeout: timeout) }
    }

    /// The configuration the SDK was started with.
    public var configuration: ConvertConfiguration { runtime.configuration }

    /// The installed config, `nil` before readiness.
    public var config: ProjectConfig? { runtime.current?.config }

    /// The environment decisions run in.
    public var environment: String? { runtime.current?.environment }

    /// Returns once the first config is installed; later calls return at once.
    ///
    /// - Throws: ``ConvertError/invalidConfiguration(_:)`` when no config can ever come (an empty
    ///   SDK key, empty or invalid direct data). Network failures do not throw.
    public func ready() async throws {
        try await runtime.readiness.wait()
    }

    /// Like ``ready()``, but gives up after `timeout` with ``ConvertError/readyTimedOut(milliseconds:)``.
    /// Once readiness has settled it answers at once, whatever the timeout (even `.zero`).
    ///
    /// When it gives up, the reason no config came (the config source's last failure: the
    /// request and its status or network error) is logged as an error and kept in
    /// ``lastConfigFailure``.
    public func ready(timeout: Duration) async throws {
        let gate = runtime.readiness
        // Settled already: no race to start, so a busy cooperative pool cannot delay the answer.
        if let settled = gate.settled { return try settled.get() }
        let clock = runtime.ports.sleepClock
        let milliseconds = ConvertConfiguration.milliseconds(timeout)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await gate.wait() }
            group.addTask {
                try await clock.sleep(for: timeout)
                throw ConvertError.readyTimedOut(milliseconds: milliseconds)
            }
            defer { group.cancelAll() }
            do {
                try await group.next()
            } catch ConvertError.readyTimedOut(let milliseconds) {
                let cause = lastConfigFailure.map { ": \($0)" } ?? ""
                runtime.log.error("not ready within \(milliseconds) ms\(cause)")
                throw ConvertError.readyTimedOut(milliseconds: milliseconds)
            }
        }
    }

    /// Fetches the config now instead of waiting for the next scheduled refresh, and returns once
    /// the answer is handled: `.updated` when a new config was installed (`config.updated` fired),
    /// `.unchanged` when the server answered "not modified" or sent the same config (the config's
    /// age in ``status`` starts again), `.failed` with the reason otherwise. A fetch already under
    /// way is joined, not repeated: calls made together send one request. `.failed` for a source
    /// that cannot fetch on demand (direct data) or once the SDK is shut down.
    ///
    /// ```swift
    /// if await sdk.refreshConfig() == .updated { print("new config") }
    /// ```
    @discardableResult
    public func refreshConfig() async -> ConfigRefreshResult {
        await runtime.refreshConfig()
    }

    /// Why the latest attempt to get a config failed (the request and its HTTP status or
    /// network error), `nil` when it succeeded or nothing has failed. The cause behind a
    /// ``ConvertError/readyTimedOut(milliseconds:)``.
    public var lastConfigFailure: String? { runtime.ports.configSource.lastFailure }

    /// Calls `completion` on the main actor once ready, or with the configuration error.
    public func ready(_ completion: @escaping @MainActor @Sendable (Result<Void, ConvertError>) -> Void) {
        let gate = runtime.readiness
        Task { @MainActor in
            completion(await Self.result(of: gate))
        }
    }

    /// Calls `completion` on `queue` once ready, or with the configuration error; for processes
    /// whose main thread is busy.
    public func ready(on queue: DispatchQueue, _ completion: @escaping @Sendable (Result<Void, ConvertError>) -> Void) {
        let gate = runtime.readiness
        Task.detached {
            let result = await Self.result(of: gate)
            queue.async { completion(result) }
        }
    }

    private static func result(of gate: ReadinessGate) async -> Result<Void, ConvertError> {
        do {
            try await gate.wait()
            return .success(())
        } catch let error as ConvertError {
            return .failure(error)
        } catch {
            return .failure(.cancelled)
        }
    }

    /// Subscribes `callback` to `event`; callbacks run off the main thread unless `delivery`
    /// is ``EventDelivery/mainActor``. The typed form, ``subscribe(to:delivery:callback:)``,
    /// does the same without `await` and hands the callback the event's own payload type.
    @discardableResult
    public func on(_ event: SystemEvent, delivery: EventDelivery = .background,
                   callback: @escaping @Sendable (EventPayloadValue) -> Void) async -> EventListenerToken {
        runtime.events.subscribe(to: event, delivery: delivery, callback: callback)
    }

    /// System events as an asynchronous sequence, typed by their payload; the subscription ends
    /// when the sequence is released or the task iterating it is cancelled. Events of one kind
    /// arrive in firing order; past `bufferingNewest` undelivered events the oldest are dropped.
    ///
    /// ```swift
    /// for await event in sdk.events(of: [.bucketing, .conversion]) {
    ///     if case .bucketing(let info) = event { print(info.visitorId, info.variationId) }
    /// }
    /// ```
    public func events(of kinds: [SystemEvent] = SystemEvent.allCases,
                       bufferingNewest limit: Int = 1024) -> AsyncStream<EventPayloadValue> {
        let hub = runtime.events
        return AsyncStream(bufferingPolicy: .bufferingNewest(max(1, limit))) { continuation in
            let tokens = Set(kinds).map { kind in hub.subscribe(to: kind) { payload in continuation.yield(payload) } }
            continuation.onTermination = { _ in
                for token in tokens { hub.unsubscribe(token) }
            }
        }
    }

    /// Every system event as an asynchronous sequence (see ``events(of:bufferingNewest:)``).
    public var events: AsyncStream<EventPayloadValue> { events() }

    /// Cancels a subscription made with ``on(_:delivery:callback:)`` (``unsubscribe(_:)`` is the
    /// same without `await`).
    public func off(_ token: EventListenerToken) async {
        runtime.events.unsubscribe(token)
    }

    /// Adds a hook run around every evaluation of every context, and on every tracking event
    /// (see ``EvaluationHook``).
    public func addHook(_ hook: any EvaluationHook) {
        runtime.addHook(hook)
    }

    /// The forced decisions in effect (see ``DecisionOverrides``).
    public var overrides: DecisionOverrides { runtime.currentOverrides }

    /// Replaces the forced decisions; contexts see them from their next call. Forced decisions
    /// are never tracked or stored.
    public func setOverrides(_ overrides: DecisionOverrides) {
        runtime.setOverrides(overrides)
    }

    /// Turns tracking on or off for every context from its next call; while off, decisions and
    /// conversions are stored but nothing is sent (and nothing is replayed later).
    public func setTrackingEnabled(_ enabled: Bool) async {
        runtime.setTrackingEnabled(enabled)
        runtime.log.info("tracking \(enabled ? "enabled" : "disabled")")
    }

    /// ``setTrackingEnabled(_:)`` with a completion handler.
    public func setTrackingEnabled(_ enabled: Bool, completion: @escaping @Sendable () -> Void) {
        Task {
            await setTrackingEnabled(enabled)
            completion()
        }
    }

    /// Whether tracking events are sent (the static `networkTracking` and the runtime switch).
    public func isTrackingEnabled() async -> Bool {
        runtime.isTrackingEnabled
    }

    /// What tracking has done so far: enqueued, sent, retried, dropped, pending.
    public var trackingCounters: TrackingCounters { runtime.ports.trackingSink.counters }

    /// Delivers pending tracking events and writes pending visitor data now. Returns once the
    /// events enqueued before the call are settled, or after the tracking sink's own deadline
    /// (twice the request timeout for the default queue); see ``flush(timeout:)``. The JavaScript
    /// SDK's `releaseQueues()`; contexts have it too (``ConvertContext/flush()``).
    public func flush() async {
        await runtime.releaseQueues()
    }

    /// ``flush()`` with a completion handler.
    public func flush(completion: @escaping @Sendable () -> Void) {
        Task {
            await flush()
            completion()
        }
    }

    /// Delivers pending tracking events and writes pending visitor data; returns `true` once
    /// every event enqueued before the call is acknowledged by the server (or refused by it and
    /// given up), `false` when `timeout` passed first. A request on the wire at the deadline
    /// keeps going and its outcome is still recorded.
    @discardableResult
    public func flush(timeout: Duration) async -> Bool {
        await runtime.releaseQueues(timeout: timeout)
    }

    /// Shuts the SDK down for a process exit: stops taking tracking events, delivers what is
    /// pending (the batch on the wire included) until `timeout`, keeps the rest in the journal
    /// for the next start (file persistence), writes visitor data, and stops every background
    /// task. Decisions keep working afterwards; tracking calls report their events dropped.
    ///
    /// ```swift
    /// let report = await sdk.shutdown(timeout: .seconds(5))
    /// if !report.drained { print("\(report.journaled) events wait for the next start, \(report.lost) lost") }
    /// ```
    @discardableResult
    public func shutdown(timeout: Duration) async -> TrackingShutdown {
        loader.cancel()
        runtime.watchers.close()
        let report = await runtime.ports.trackingSink.shutdown(timeout: timeout)
        await runtime.writeVisitorData()
        if let undelivered = report.undeliveredSummary {
            runtime.log.warn("shut down: \(undelivered); \(report)")
        } else {
            runtime.log.info("shut down: \(report)")
        }
        return report
    }

    /// ``shutdown(timeout:)`` with a completion handler.
    public func shutdown(timeout: Duration, completion: @escaping @Sendable (TrackingShutdown) -> Void) {
        Task { completion(await shutdown(timeout: timeout)) }
    }

    /// A context for the auto-generated visitor id, created once and persisted.
    public func createContext() -> ConvertContext {
        ConvertContext(runtime: runtime, visitorId: runtime.autoGeneratedVisitorId(), attributes: [:])
    }

    /// A context for `visitorId`.
    public func createContext(visitorId: String) -> ConvertContext {
        ConvertContext(runtime: runtime, visitorId: visitorId, attributes: [:])
    }

    /// A context for `visitorId` with its attributes (audience data).
    public func createContext(visitorId: String, attributes: [String: JSONValue]) -> ConvertContext {
        ConvertContext(runtime: runtime, visitorId: visitorId, attributes: attributes)
    }
}

extension ConvertSwiftSDK: CustomReflectable {
    /// What `dump` shows: the configuration, redacted, and whether a config is installed —
    /// never the ports or the runtime behind them.
    public var customMirror: Mirror {
        Mirror(self, children: ["configuration": runtime.configuration, "isReady": runtime.current != nil],
               displayStyle: .class)
    }
}
