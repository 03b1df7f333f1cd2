import ConvertModel
import ConvertSynchronization
import Foundation

/// The validators a server sent with the config in hand, echoed verbatim on the next request
/// (`If-None-Match`, `If-Modified-Since`) so that an unchanged config costs a 304.
package struct ConfigValidators: Sendable, Hashable {
    /// The `ETag` header, as sent.
    package var etag: String?
    /// The `Last-Modified` header, as sent.
    package var lastModified: String?

    /// Validators with these values (none by default).
    package init(etag: String? = nil, lastModified: String? = nil) {
        self.etag = etag
        self.lastModified = lastModified
    }
}

/// What the copies of one ``RemoteConfigSource`` share about fetching: the validators, the
/// fetch under way (so a refresh joins it instead of sending a second request) and where the
/// running loop delivers.
final class RefreshCoordinator: Sendable {
    struct Receivers: Sendable {
        let id: UInt64
        let deliver: @Sendable (ConfigDocument) async -> Void
        let report: @Sendable (ConfigSourceReport) -> Void
    }

    private struct State {
        var validators = ConfigValidators()
        var inFlight: Task<ConfigRefreshResult, Never>?
        var receivers: Receivers?
        var nextId: UInt64 = 0
    }

    private let state = Locked(State())

    /// Makes `deliver` and `report` the receivers of every fetch until ``unregister(_:)``.
    func register(deliver: @escaping @Sendable (ConfigDocument) async -> Void,
                  report: @escaping @Sendable (ConfigSourceReport) -> Void) -> UInt64 {
        state.withValue { state in
            state.nextId += 1
            state.receivers = Receivers(id: state.nextId, deliver: deliver, report: report)
            return state.nextId
        }
    }

    /// Stops delivering to the receivers registered as `id`, and cancels a fetch under way for them.
    func unregister(_ id: UInt64) {
        let running: Task<ConfigRefreshResult, Never>? = state.withValue { state in
            guard state.receivers?.id == id else { return nil }
            state.receivers = nil
            return state.inFlight
        }
        running?.cancel()
    }

    /// The fetch under way, or a new one made by `start` with the validators and receivers now;
    /// `nil` when no loop runs.
    func join(_ start: @escaping @Sendable (ConfigValidators, Receivers) async -> ConfigRefreshResult)
        -> Task<ConfigRefreshResult, Never>? {
        state.withValue { state in
            if let running = state.inFlight { return running }
            guard let receivers = state.receivers else { return nil }
            let validators = state.validators
            let task = Task { [self] in
                let result = await start(validators, receivers)
                // Cleared only after delivery: a refresh that joined returns once the config is installed.
                self.state.withValue { $0.inFlight = nil }
                return result
            }
            state.inFlight = task
            return task
        }
    }

    /// Keeps the validators of the config just delivered.
    func keep(_ validators: ConfigValidators) {
        state.withValue { $0.validators = validators }
    }
}

extension RemoteConfigSource {
    /// Fetches now, joining a fetch already under way (the scheduled one or another refresh)
    /// rather than sending a second request. A new config is cached and handed to the running
    /// ``run(deliver:report:)``'s `deliver` before this returns (`.updated`); a 304 is reported
    /// as confirmed (`.unchanged`); a failure is reported and returned. The refresh schedule
    /// stays as it was. `.failed` when the source is not running.
    public func refresh() async -> ConfigRefreshResult {
        guard let task = coordinator.join({ validators, receivers in await self.cycle(validators, receivers) }) else {
            return .failed("the config source is not running")
        }
        return await task.value
    }

    /// One scheduled fetch: joins one under way; the loop's cancellation cancels it.
    func pollOnce() async -> ConfigRefreshResult {
        guard let task = coordinator.join({ validators, receivers in await self.cycle(validators, receivers) }) else {
            return .failed("the config source is not running")
        }
        return await withTaskCancellationHandler { await task.value } onCancel: { task.cancel() }
    }

    /// `interval` times a random factor in `[0.9, 1.1]`, to the millisecond.
    func jittered(_ interval: Duration) -> Duration {
        let factor = 1 + 0.1 * (2 * min(max(random(), 0), 1) - 1)
        let (seconds, attoseconds) = interval.components
        let milliseconds = (Double(seconds) * 1000 + Double(attoseconds) / 1e15) * factor
        return .milliseconds(Int64(milliseconds.rounded()))
    }

    /// Fetches once and hands the outcome to `receivers`.
    private func cycle(_ validators: ConfigValidators, _ receivers: RefreshCoordinator.Receivers) async -> ConfigRefreshResult {
        switch await fetch(etag: validators.etag, lastModified: validators.lastModified) {
        case .fresh(let bytes, let validators):
            coordinator.keep(validators)
            store(bytes)
            status.withValue { $0.delivered = true }
            await receivers.deliver(ConfigDocument(bytes: bytes, origin: .network))
            return .updated
        case .notModified:
            recordConfirmation()
            receivers.report(.confirmed)
            return .unchanged
        case .failed(let error):
            let reason = describe(error)
            receivers.report(.failed(reason))
            return .failed(reason)
        }
    }
}
