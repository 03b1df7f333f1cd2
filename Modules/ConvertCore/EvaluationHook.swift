import ConvertEnvironment
import ConvertEvents
import ConvertTracking
import ConvertRules
import ConvertSynchronization

/// What a hook is told about one evaluation: which flag, for whom, with which attributes.
public struct HookContext: Sendable {
    /// An experience or a feature.
    public enum FlagKind: String, Sendable, Hashable {
        /// `experience` for variation calls, `feature` for feature calls.
        case experience, feature
    }

    /// Whether an experience or a feature is evaluated.
    public let flagKind: FlagKind
    /// The experience or feature key asked for.
    public let key: String
    /// The context's visitor.
    public let visitorId: String
    /// The context's attributes when the evaluation started.
    public let attributes: [String: JSONValue]
}

/// The outcome a hook sees after an evaluation.
public enum EvaluationDetails: Sendable {
    /// An experience's detail.
    case variation(VariationDetail)
    /// A feature's detail.
    case feature(FeatureDetail)

    /// Why the evaluation came out as it did.
    public var reason: EvaluationReason {
        switch self {
        case .variation(let detail): detail.reason
        case .feature(let detail): detail.reason
        }
    }

    /// Set when ``reason`` is ``EvaluationReason/error``.
    public var errorCode: EvaluationErrorCode? {
        switch self {
        case .variation(let detail): detail.errorCode
        case .feature(let detail): detail.errorCode
        }
    }

    /// The variation key (or id) given, if any.
    public var variant: String? {
        switch self {
        case .variation(let detail): detail.variant
        case .feature(let detail): detail.value.isEnabled ? detail.variant ?? "enabled" : nil
        }
    }
}

/// Code run around every experience and feature evaluation, and on every tracking event the SDK
/// queues — OpenFeature's hook shape: `before`, then `after` (or `error` when the evaluation
/// ended in ``EvaluationReason/error``), then `finally`.
///
/// Hooks run on the calling thread, outside every lock of the SDK. A hook that throws is logged
/// (at most one line per 10 s) and never changes the decision; a slow hook slows only the call
/// it runs in (tracking delivery never waits for it). Every method has an empty default.
///
/// ```swift
/// struct Metrics: EvaluationHook {
///     func after(_ context: HookContext, details: EvaluationDetails) {
///         counter(context.key, details.variant ?? "none", details.reason.rawValue).increment()
///     }
/// }
/// sdk.addHook(Metrics())
/// ```
public protocol EvaluationHook: Sendable {
    /// Before the evaluation.
    func before(_ context: HookContext) throws
    /// After an evaluation that gave a value (any reason but ``EvaluationReason/error``).
    func after(_ context: HookContext, details: EvaluationDetails) throws
    /// After an evaluation that ended in ``EvaluationReason/error``.
    func error(_ context: HookContext, details: EvaluationDetails) throws
    /// Last, whatever the outcome.
    func finally(_ context: HookContext, details: EvaluationDetails) throws
    /// A tracking event the SDK has just queued (a bucketing or a conversion).
    func tracked(_ event: TrackingEvent) throws
    /// What a `trackConversion` call came to: tracked, a duplicate, dropped or refused.
    func conversion(_ goalKey: String, visitorId: String, result: ConversionResult) throws
}

/// Every stage does nothing unless the hook implements it.
extension EvaluationHook {
    public func before(_ context: HookContext) throws {}
    public func after(_ context: HookContext, details: EvaluationDetails) throws {}
    public func error(_ context: HookContext, details: EvaluationDetails) throws {}
    public func finally(_ context: HookContext, details: EvaluationDetails) throws {}
    public func tracked(_ event: TrackingEvent) throws {}
    public func conversion(_ goalKey: String, visitorId: String, result: ConversionResult) throws {}
}

/// A hook that logs each evaluation (`flag key → variant (reason)`) and each tracking event.
public struct LoggingHook: EvaluationHook {
    private let log: SDKLog
    private let level: LogLevel

    /// Logs to `sink` at `level`.
    public init(sink: any LogSink, level: LogLevel = .info) {
        log = SDKLog(sink: sink, minimum: level)
        self.level = level
    }

    /// Logs `flag key for visitor: variant (reason[, error code])`.
    public func finally(_ context: HookContext, details: EvaluationDetails) {
        let error = details.errorCode.map { ", \($0.rawValue)" } ?? ""
        log(level, "\(context.flagKind.rawValue) \(context.key) for \(context.visitorId): \(details.variant ?? "none") "
            + "(\(details.reason.rawValue)\(error))")
    }

    /// Logs `tracking eventType for visitor`.
    public func tracked(_ event: TrackingEvent) {
        log(level, "tracking \(event.eventType) for \(event.visitorId)")
    }
}

extension SDKRuntime {
    /// Runs `body` on each hook; a throw is logged, at most once per 10 s, and goes no further.
    func runHooks(_ hooks: [any EvaluationHook], _ stage: String, _ body: (any EvaluationHook) throws -> Void) {
        for hook in hooks {
            do {
                try body(hook)
            } catch {
                let now = ports.sleepClock.elapsed
                if let count = hookFailures.withValue({ $0.note(now: now) }) {
                    log.warn("evaluation hook \(type(of: hook)) threw in \(stage): \(error); the decision stands "
                             + "(\(count) failure(s) since the last report)")
                }
            }
        }
    }

    /// `after` (or `error`), then `finally`.
    func finishHooks(_ hooks: [any EvaluationHook], _ context: HookContext, _ details: EvaluationDetails) {
        if details.reason == .error {
            runHooks(hooks, "error") { try $0.error(context, details: details) }
        } else {
            runHooks(hooks, "after") { try $0.after(context, details: details) }
        }
        runHooks(hooks, "finally") { try $0.finally(context, details: details) }
    }

    /// Tells the SDK's hooks (a call's ``Decider/trackingHooks``) about a queued
    /// tracking event, outside every lock.
    func announceTracked(_ event: TrackingEvent, to hooks: [any EvaluationHook]) {
        guard !hooks.isEmpty else { return }
        runHooks(hooks, "tracked") { try $0.tracked(event) }
    }
}
