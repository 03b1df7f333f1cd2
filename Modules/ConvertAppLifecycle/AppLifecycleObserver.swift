import ConvertCore
import ConvertQueue
import ConvertEnvironment
import ConvertSynchronization
import Dispatch

/// How the SDK behaves in an app's life.
public struct AppOptions: Sendable, Hashable {
    /// How long a flush may take after the app goes to the background: under the time the
    /// system grants (about 30 seconds on iOS), so the flush ends before the system takes it back.
    public var backgroundFlushDeadline: Duration
    /// How long a flush may take when the process is about to end. Events are journaled when
    /// they are queued (file persistence), so what this flush does not deliver waits for the
    /// next launch.
    public var terminateFlushDeadline: Duration
    /// The config's age past which returning to the foreground refreshes it; `nil` takes the
    /// configuration's refresh interval (`dataRefreshIntervalMs`).
    public var refreshAfter: Duration?
    /// In an app extension, the app group whose container holds the SDK's storage directory:
    /// the background session of an extension uploads only from that container.
    public var sharedContainerIdentifier: String?

    /// Options with the SDK's defaults: 25 seconds for the background flush, 2 for the last one.
    public init(backgroundFlushDeadline: Duration = .seconds(25), terminateFlushDeadline: Duration = .seconds(2),
                refreshAfter: Duration? = nil, sharedContainerIdentifier: String? = nil) {
        self.backgroundFlushDeadline = backgroundFlushDeadline
        self.terminateFlushDeadline = terminateFlushDeadline
        self.refreshAfter = refreshAfter
        self.sharedContainerIdentifier = sharedContainerIdentifier
    }
}

/// Reacts to an app's transitions on behalf of one SDK: delivers in the time granted on
/// background, refreshes a config older than the refresh interval on return, flushes briefly
/// before termination. Holds the SDK weakly: the app owns it.
final class AppLifecycleObserver: Sendable {
    private struct State {
        /// The grant of the latest move to the background, with its flush, while it lasts; its
        /// grant is `nil` while being asked for, and `refused` set when the system said no then.
        var current: (id: UInt64, grant: BackgroundTimeGrant?, flush: Task<Void, Never>?, refused: Bool)?
        var nextId: UInt64 = 0
    }

    private let reference: WeakSDK
    private var sdk: ConvertSwiftSDK? { reference.sdk }
    private let source: any AppLifecycleSource
    private let options: AppOptions
    private let refreshAfter: Duration
    private let state = Locked(State())
    /// The background delivery, told of the app's moves so a deferred upload is left alone.
    private let background: BackgroundTrackingDelivery?

    init(sdk: ConvertSwiftSDK, source: any AppLifecycleSource, options: AppOptions,
         background: BackgroundTrackingDelivery? = nil) {
        reference = WeakSDK(sdk)
        self.background = background
        self.source = source
        self.options = options
        refreshAfter = options.refreshAfter ?? .milliseconds(max(1000, sdk.configuration.dataRefreshIntervalMs))
        source.observe { [weak self] event in self?.handle(event) }
    }

    func cancel() {
        source.cancel()
        endBackgroundTime()
    }

    private func handle(_ event: AppLifecycleEvent) {
        background?.noteLifecycle(event)
        guard let sdk else { return }
        switch event {
        case .didEnterBackground:
            enteredBackground(sdk)
        case .didBecomeActive:
            // Timers do not run while the app is suspended: a config older than the interval
            // is fetched now rather than at the next tick.
            if let age = sdk.status.configAge, age >= refreshAfter {
                Task { await sdk.refreshConfig() }
            }
        case .willResignActive:
            // Often an interruption (a call, the notification centre) the app returns from at
            // once; the work is done when it really goes to the background.
            break
        case .willTerminate:
            terminating(sdk)
        }
    }

    /// Asks for background time and flushes within the deadline; the time is given back as
    /// soon as the flush is over, or when the system takes it back first (the flush is then
    /// abandoned: its events stay journaled, and a batch on the wire keeps its outcome). When
    /// the system refuses the time, nothing is started.
    private func enteredBackground(_ sdk: ConvertSwiftSDK) {
        endBackgroundTime()
        let id = state.withValue { state in
            defer { state.nextId += 1 }
            // Recorded before asking: a refusal may come back before the grant does.
            state.current = (state.nextId, nil, nil, false)
            return state.nextId
        }
        let grant = source.beginBackgroundTime { [weak self] in self?.endBackgroundTime(id) }
        let refused = state.withValue { state -> Bool in
            guard let current = state.current, current.id == id, !current.refused else { return true }
            state.current?.grant = grant
            return false
        }
        if refused {
            grant.end()
            return
        }
        let deadline = options.backgroundFlushDeadline
        // Not the SDK: a flush waiting for its deadline must not keep a released SDK alive.
        let flushQueues = sdk.queueFlusher
        let flush = Task { [weak self] in
            _ = await flushQueues(deadline)
            self?.endBackgroundTime(id)
        }
        state.withValue { state in
            if state.current?.id == id { state.current?.flush = flush }
        }
    }

    /// The process ends once the notification's handler returns: the last flush runs in time
    /// asked for, and the handler waits for it, up to the deadline.
    private func terminating(_ sdk: ConvertSwiftSDK) {
        endBackgroundTime()
        let grant = source.beginBackgroundTime {}
        let done = DispatchSemaphore(value: 0)
        let deadline = options.terminateFlushDeadline
        let flush = Task {
            _ = await sdk.flush(timeout: deadline)
            done.signal()
        }
        let (seconds, attoseconds) = deadline.components
        let wait = Double(seconds) + Double(attoseconds) / 1e18
        // The flush's own deadline is on the SDK's clock; this one on the wall's, a little later.
        if done.wait(timeout: .now() + wait + 0.25) == .timedOut { flush.cancel() }
        grant.end()
    }

    /// Ends the current grant (only the one numbered `id`, when given) exactly once; a grant
    /// still being asked for is marked refused, and ended when it comes back.
    private func endBackgroundTime(_ id: UInt64? = nil) {
        let ended = state.withValue { state -> (grant: BackgroundTimeGrant, flush: Task<Void, Never>?)? in
            guard let current = state.current, id == nil || current.id == id else { return nil }
            guard let grant = current.grant else {
                state.current?.refused = true
                return nil
            }
            state.current = nil
            return (grant, current.flush)
        }
        guard let ended else { return }
        ended.flush?.cancel()
        ended.grant.end()
    }
}

/// The SDK held weakly. `@unchecked`: a weak reference is loaded and cleared atomically, and the
/// box has no other state.
final class WeakSDK: @unchecked Sendable {
    weak var sdk: ConvertSwiftSDK?
    init(_ sdk: ConvertSwiftSDK) { self.sdk = sdk }
}
