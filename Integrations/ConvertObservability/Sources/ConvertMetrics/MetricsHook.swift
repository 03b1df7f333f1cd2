import ConvertSwiftSDK
import CoreMetrics
import Metrics
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An `EvaluationHook` that counts evaluations, exposures and conversions with swift-metrics.
///
/// | metric | type | dimensions |
/// |---|---|---|
/// | `convert_evaluations_total` | counter | `kind` (`experience`, `feature`), `key`, `variant`, `reason` |
/// | `convert_exposures_total` | counter | `experience`, `variation` (ids) |
/// | `convert_conversions_total` | counter | `goal` (id), `type` (`conversion`, `transaction`) |
/// | `convert_conversion_calls_total` | counter | `goal` (key), `result` (`tracked`, `duplicate`, `dropped`, `refused`) |
///
/// `variant` is the variation's key (or id) given, `enabled` for a feature on without one, `none`
/// when none was given (no variation, a feature off). `reason` is OpenTelemetry's
/// `feature_flag.result.reason` value (`targeting_match`, `split`, `cached`, `static`,
/// `disabled`, `default`, `error`). Exposures and conversions are the tracking events the SDK
/// queued, so they count only while tracking is on. Conversion calls count every
/// `trackConversion` by its outcome: `refused` is any answer that records nothing to send (an
/// unknown goal, unmatched rules, invalid goal data, tracking off, no consent, not ready).
///
/// Cardinality is bounded: past `limits.keys` distinct keys (experience or feature keys, experience
/// ids, goal ids) a new one is counted as `other`, and past `limits.variantsPerKey` distinct
/// variants (variations) of one key a new one is `other` too.
///
/// ```swift
/// sdk.addHook(MetricsHook())
/// ```
public struct MetricsHook: EvaluationHook {
    /// Bounds on the distinct values of the `key` and `variant` dimensions.
    public struct Limits: Sendable, Hashable {
        /// Distinct keys per metric; more are counted as `other`.
        public var keys: Int
        /// Distinct variants of one key; more are counted as `other`.
        public var variantsPerKey: Int

        /// Bounds of `keys` keys and `variantsPerKey` variants per key.
        public init(keys: Int = 100, variantsPerKey: Int = 10) {
            self.keys = keys
            self.variantsPerKey = variantsPerKey
        }
    }

    private let evaluations: BoundedCounters
    private let exposures: BoundedCounters
    private let conversions: BoundedCounters
    private let conversionCalls: BoundedCounters

    /// A hook counting through `factory` (the bootstrapped `MetricsSystem` by default) within `limits`.
    public init(limits: Limits = Limits(), factory: any MetricsFactory = MetricsSystem.factory) {
        evaluations = BoundedCounters(label: "convert_evaluations_total", limits: limits, factory: factory)
        exposures = BoundedCounters(label: "convert_exposures_total", limits: limits, factory: factory)
        conversions = BoundedCounters(label: "convert_conversions_total", limits: limits, factory: factory)
        conversionCalls = BoundedCounters(label: "convert_conversion_calls_total", limits: limits, factory: factory)
    }

    /// The stages the hook counts.
    public var stages: EvaluationHookStages { [.finally, .tracked, .conversion] }
    /// The hook reads a feature's own reason and variant, not its carriers'.
    public var readsFeatureExperiences: Bool { false }

    /// Counts the evaluation, whatever its outcome.
    public func finally(_ context: HookContext, details: EvaluationDetails) {
        let reason = details.reason
        evaluations.increment(key: ("key", context.key), variant: ("variant", details.variant ?? "none"),
                              tag: (context.flagKind == .experience ? 0 : 16) + reason.tag,
                              ("kind", context.flagKind.rawValue), ("reason", reason.snakeCaseName))
    }

    /// Counts a `trackConversion` call by its outcome.
    public func conversion(_ goalKey: String, visitorId: String, result: ConversionResult) {
        let (outcome, tag) = switch result {
        case .tracked: ("tracked", 0)
        case .duplicate: ("duplicate", 1)
        case .dropped: ("dropped", 2)
        default: ("refused", 3)
        }
        conversionCalls.increment(key: ("goal", goalKey), variant: nil, tag: tag, ("result", outcome))
    }

    /// Counts a queued bucketing as an exposure, a queued conversion as a conversion.
    public func tracked(_ event: TrackingEvent) {
        switch event.payload {
        case .bucketing(let experienceId, let variationId):
            exposures.increment(key: ("experience", experienceId), variant: ("variation", variationId), tag: 0)
        case .conversion(let goalId, let goalData, _):
            conversions.increment(key: ("goal", goalId), variant: nil, tag: goalData == nil ? 0 : 1,
                                  ("type", goalData == nil ? "conversion" : "transaction"))
        }
    }
}

/// One counter per admitted combination of dimension values, the key and variant values bounded.
final class BoundedCounters: Sendable {
    private struct State {
        /// Admitted keys and, for each, its admitted variants.
        var admitted: [String: Set<String>] = [:]
        var counters: [[String]: Counter] = [:]
    }

    static let overflow = "other"

    private let label: String
    private let limits: MetricsHook.Limits
    private let factory: any MetricsFactory
    private let state = Protected(State())
    /// The counter each combination asked for goes to (an overflowing one to `other`'s), found
    /// again without the lock of `state`. One cache per stripe of threads: every evaluation
    /// looks here, and with one lock for all the threads deciding at once waited for each other.
    private let caches = (0..<BoundedCounters.stripes).map { _ in Protected(CounterTable()) }
    private static let stripes = 16

    init(label: String, limits: MetricsHook.Limits, factory: any MetricsFactory) {
        self.label = label
        self.limits = limits
        self.factory = factory
    }

    /// Increments the counter of `key`, `variant` (each `other` past its bound) and the `first`
    /// and `second` dimensions (bounded by their nature), whose values `tag` numbers one to one;
    /// those two are read only the first time a combination comes.
    func increment(key: (name: String, value: String), variant: (name: String, value: String)?, tag: Int,
                   _ first: @autoclosure () -> (String, String)? = nil, _ second: @autoclosure () -> (String, String)? = nil) {
        let hash = CounterTable.hash(key: key.value, variant: variant?.value, tag: tag)
        let cache = caches[Self.stripe()]
        // Every evaluation comes here: one lookup, no allocation, once the combination is known.
        if let counter = cache.withValue({ $0.counter(key: key.value, variant: variant?.value, tag: tag, hash: hash) }) {
            counter._withUnsafeGuaranteedRef { $0.increment() }
            return
        }
        let asked = CounterTable.Asked(key: key.value, variant: variant?.value, tag: tag)
        let (first, second) = (first(), second())
        let counter = state.withValue { bounded(key: key, variant: variant, first, second, &$0) }
        // Asked combinations are remembered up to a bound too; past it they take the long way.
        let bound = 4 * limits.keys * max(1, limits.variantsPerKey)
        cache.withValue { if $0.count < bound { $0.insert(counter, for: asked, hash: hash) } }
        counter.increment()
    }

    /// The calling thread's stripe: the threads of a pool mostly land on stripes of their own.
    private static func stripe() -> Int {
        #if canImport(Glibc)
        let thread = UInt(pthread_self())
        #else
        // A pointer on Darwin and Musl.
        let thread = UInt(bitPattern: pthread_self())
        #endif
        // Thread handles are addresses of thread control blocks, pages apart.
        return Int(truncatingIfNeeded: (thread >> 12) ^ (thread >> 20)) & (stripes - 1)
    }

    private func bounded(key: (name: String, value: String), variant: (name: String, value: String)?,
                         _ first: (String, String)?, _ second: (String, String)?, _ state: inout State) -> Counter {
        var keyValue = key.value
        if state.admitted[keyValue] == nil {
            if state.admitted.count < limits.keys {
                state.admitted[keyValue] = []
            } else {
                keyValue = Self.overflow
            }
        }
        var dimensions = [(key.name, keyValue)]
        if let variant {
            var variantValue = variant.value
            let known = state.admitted[keyValue] ?? []
            if !known.contains(variantValue) {
                if known.count < limits.variantsPerKey {
                    state.admitted[keyValue, default: []].insert(variantValue)
                } else {
                    variantValue = Self.overflow
                }
            }
            dimensions.append((variant.name, variantValue))
        }
        if let first { dimensions.append(first) }
        if let second { dimensions.append(second) }
        let id = dimensions.map(\.1)
        if let counter = state.counters[id] { return counter }
        let counter = Counter(label: label, dimensions: dimensions, factory: factory)
        state.counters[id] = counter
        return counter
    }
}

extension EvaluationReason {
    /// A number of its own per reason, below 16.
    fileprivate var tag: Int {
        switch self {
        case .targetingMatch: 0
        case .split: 1
        case .cached: 2
        case .static: 3
        case .disabled: 4
        case .default: 5
        case .error: 6
        }
    }
}
