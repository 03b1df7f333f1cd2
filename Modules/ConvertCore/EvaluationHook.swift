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
/// A hook that implements only some stages says which in ``stages``: the SDK then skips the
/// others, and builds no evaluation context or detail when no hook of a call implements an
/// evaluation stage (before, after, error, finally).
///
/// ```swift
/// struct Metrics: EvaluationHook {
///     var stages: EvaluationHookStages { .after }
///     func after(_ context: HookContext, details: EvaluationDetails) {
///         counter(context.key, details.variant ?? "none", details.reason.rawValue).increment()
///     }
/// }
/// sdk.addHook(Metrics())
/// ```
public protocol EvaluationHook: Sendable {
    /// The stages this hook implements; the SDK calls no other (all of them by default).
    /// Read once, when the hook is added.
    var stages: EvaluationHookStages { get }
    /// Whether the hook reads ``FeatureDetail/experiences`` (`true` by default). When no hook
    /// of a call does, a feature's detail carries none and its carrier experiences are not
    /// described, which saves most of what a feature evaluation costs a hook. Read once, when
    /// the hook is added.
    var readsFeatureExperiences: Bool { get }
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
    public var stages: EvaluationHookStages { .all }
    public var readsFeatureExperiences: Bool { true }
    public func before(_ context: HookContext) throws {}
    public func after(_ context: HookContext, details: EvaluationDetails) throws {}
    public func error(_ context: HookContext, details: EvaluationDetails) throws {}
    public func finally(_ context: HookContext, details: EvaluationDetails) throws {}
    public func tracked(_ event: TrackingEvent) throws {}
    public func conversion(_ goalKey: String, visitorId: String, result: ConversionResult) throws {}
}

/// The stages of an ``EvaluationHook``.
public struct EvaluationHookStages: OptionSet, Sendable, Hashable {
    /// One bit per stage.
    public let rawValue: UInt8

    /// The stages whose bits `rawValue` sets.
    public init(rawValue: UInt8) {
        self.rawValue = rawValue
    }

    /// ``EvaluationHook/before(_:)``.
    public static let before = EvaluationHookStages(rawValue: 1 << 0)
    /// ``EvaluationHook/after(_:details:)``.
    public static let after = EvaluationHookStages(rawValue: 1 << 1)
    /// ``EvaluationHook/error(_:details:)``.
    public static let error = EvaluationHookStages(rawValue: 1 << 2)
    /// ``EvaluationHook/finally(_:details:)``.
    public static let finally = EvaluationHookStages(rawValue: 1 << 3)
    /// ``EvaluationHook/tracked(_:)``.
    public static let tracked = EvaluationHookStages(rawValue: 1 << 4)
    /// ``EvaluationHook/conversion(_:visitorId:result:)``.
    public static let conversion = EvaluationHookStages(rawValue: 1 << 5)
    /// The four stages around an evaluation.
    public static let evaluation: EvaluationHookStages = [.before, .after, .error, .finally]
    /// Every stage.
    public static let all: EvaluationHookStages = [.evaluation, .tracked, .conversion]
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

    public var stages: EvaluationHookStages { [.finally, .tracked] }
    public var readsFeatureExperiences: Bool { false }

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

/// Hooks as a call runs them: each boxed once, when added, so that running a stage copies no
/// hook value (an existential copy retains every reference the hook holds), with the stages
/// any of them implements.
struct HookList: Sendable {
    /// Each box with an unretained reference to it, which running a stage goes through: the
    /// entry keeps the box, and a call borrows it instead of retaining it (every core retaining
    /// the same boxes would contend for their reference counts' cache lines).
    private struct Entry: @unchecked Sendable {
        let box: HookBox
        let unretained: Unmanaged<HookBox>
    }
    private var entries: [Entry] = []
    /// The union of the hooks' stages.
    private(set) var stages: EvaluationHookStages = []
    /// Whether any hook reads a feature detail's experiences.
    private(set) var readsFeatureExperiences = false

    var isEmpty: Bool { entries.isEmpty }

    /// Whether any hook implements one of `stages`.
    func runs(_ stages: EvaluationHookStages) -> Bool { !self.stages.isDisjoint(with: stages) }

    mutating func append(_ hook: any EvaluationHook) {
        let box = HookBox.boxing(hook)
        entries.append(Entry(box: box, unretained: Unmanaged.passUnretained(box)))
        stages.formUnion(box.stages)
        // Only the stages that are handed a detail can read its experiences.
        readsFeatureExperiences = readsFeatureExperiences
            || box.readsFeatureExperiences && !box.stages.isDisjoint(with: [.after, .error, .finally])
    }

    /// `first`'s hooks, then `second`'s.
    static func + (first: HookList, second: HookList) -> HookList {
        if second.isEmpty { return first }
        if first.isEmpty { return second }
        return HookList(entries: first.entries + second.entries, stages: first.stages.union(second.stages),
                        readsFeatureExperiences: first.readsFeatureExperiences || second.readsFeatureExperiences)
    }

    /// Runs `body` on each box, borrowed: the list keeps them alive for the call.
    func forEach(_ body: (HookBox) throws -> Void) rethrows {
        try entries.withUnsafeBufferPointer { entries in
            for index in entries.indices {
                try entries[index].unretained._withUnsafeGuaranteedRef { try body($0) }
            }
        }
    }
}

/// One hook behind a class: a stage is one virtual call on the hook value stored in place.
class HookBox: @unchecked Sendable {
    let stages: EvaluationHookStages
    let readsFeatureExperiences: Bool
    /// The hook's type, for the log line of a hook that throws.
    let typeName: String

    init(stages: EvaluationHookStages, readsFeatureExperiences: Bool, typeName: String) {
        self.stages = stages
        self.readsFeatureExperiences = readsFeatureExperiences
        self.typeName = typeName
    }

    static func boxing(_ hook: any EvaluationHook) -> HookBox { box(hook) }

    private static func box<Hook: EvaluationHook>(_ hook: Hook) -> HookBox { TypedHookBox(hook) }

    func before(_ context: HookContext) throws {}
    func after(_ context: HookContext, details: EvaluationDetails) throws {}
    func error(_ context: HookContext, details: EvaluationDetails) throws {}
    func finally(_ context: HookContext, details: EvaluationDetails) throws {}
    func tracked(_ event: TrackingEvent) throws {}
    func conversion(_ goalKey: String, visitorId: String, result: ConversionResult) throws {}
}

// The hook is immutable and Sendable; the box adds no state.
private final class TypedHookBox<Hook: EvaluationHook>: HookBox, @unchecked Sendable {
    let hook: Hook

    init(_ hook: Hook) {
        self.hook = hook
        super.init(stages: hook.stages, readsFeatureExperiences: hook.readsFeatureExperiences,
                   typeName: String(describing: Hook.self))
    }

    override func before(_ context: HookContext) throws { try hook.before(context) }
    override func after(_ context: HookContext, details: EvaluationDetails) throws { try hook.after(context, details: details) }
    override func error(_ context: HookContext, details: EvaluationDetails) throws { try hook.error(context, details: details) }
    override func finally(_ context: HookContext, details: EvaluationDetails) throws {
        try hook.finally(context, details: details)
    }
    override func tracked(_ event: TrackingEvent) throws { try hook.tracked(event) }
    override func conversion(_ goalKey: String, visitorId: String, result: ConversionResult) throws {
        try hook.conversion(goalKey, visitorId: visitorId, result: result)
    }
}

extension SDKRuntime {
    /// Runs `body` on each hook implementing `stage`; a throw is logged, at most once per 10 s,
    /// and goes no further.
    @inline(__always)
    func runHooks(_ hooks: HookList, _ stage: EvaluationHookStages, _ body: (HookBox) throws -> Void) {
        guard hooks.runs(stage) else { return }
        hooks.forEach { box in
            guard box.stages.contains(stage) else { return }
            do {
                try body(box)
            } catch {
                hookThrew(box, stage, error)
            }
        }
    }

    private func hookThrew(_ box: HookBox, _ stage: EvaluationHookStages, _ error: any Error) {
        let now = ports.sleepClock.elapsed
        if let count = hookFailures.withValue({ $0.note(now: now) }) {
            log.warn("evaluation hook \(box.typeName) threw in \(stage.name): \(error); the decision stands "
                     + "(\(count) failure(s) since the last report)")
        }
    }

    /// `after` (or `error`), then `finally`.
    func finishHooks(_ hooks: HookList, _ context: HookContext, _ details: EvaluationDetails) {
        if details.reason == .error {
            runHooks(hooks, .error) { try $0.error(context, details: details) }
        } else {
            runHooks(hooks, .after) { try $0.after(context, details: details) }
        }
        runHooks(hooks, .finally) { try $0.finally(context, details: details) }
    }

    /// Tells the SDK's hooks (a call's ``Decider/trackingHooks``) about a queued
    /// tracking event, outside every lock.
    func announceTracked(_ event: TrackingEvent, to hooks: HookList) {
        runHooks(hooks, .tracked) { try $0.tracked(event) }
    }
}

extension EvaluationHookStages {
    /// The stage's method name, for logs.
    var name: String {
        switch self {
        case .before: "before"
        case .after: "after"
        case .error: "error"
        case .finally: "finally"
        case .tracked: "tracked"
        case .conversion: "conversion"
        default: "stages \(rawValue)"
        }
    }
}
