import ConvertSwiftSDK
import Instrumentation
import OTelSemanticConventions
import Tracing

/// An `EvaluationHook` that records each evaluation on the current trace, with OpenTelemetry's
/// feature-flag semantic conventions: an event named `feature_flag.evaluation` with
///
/// | attribute | value |
/// |---|---|
/// | `feature_flag.key` | the experience or feature key asked for |
/// | `feature_flag.provider.name` | `providerName` (`Convert`) |
/// | `feature_flag.result.variant` | the variation's key (or id), `enabled` for a feature on without one; absent when none |
/// | `feature_flag.result.reason` | `targeting_match`, `split`, `cached`, `static`, `disabled`, `default` or `error` |
/// | `feature_flag.context.id` | the visitor id, unless `recordsVisitorId` is `false` |
/// | `error.type` | on errors: `flag_not_found`, `provider_not_ready`, `invalid_context`, `type_mismatch` |
/// | `feature_flag.error.message` | on errors: the SDK's error code |
///
/// The event goes on the span the evaluation runs in: the tracer's
/// `activeSpan(identifiedBy: ServiceContext.current)`, swift-distributed-tracing's way to find
/// the current span (decisions are synchronous calls in the request's task, so the task-local
/// context is the request's). A tracer that does not implement that lookup (it is optional and
/// answers `nil` by default) gets, with `Fallback.childSpan`, a short child span named
/// `feature_flag.evaluation` holding the event instead. Without a service context or with an empty
/// one (no trace begun), and on a span that records nothing (no tracer bootstrapped, a trace
/// sampled out), nothing is recorded or built. A context that carries only baggage is handed to
/// the tracer like any other: one that finds no span in it gets the child span, a root span then.
///
/// ```swift
/// sdk.addHook(TracingHook())
/// ```
public struct TracingHook: EvaluationHook {
    /// What to do when the tracer cannot find the span of the current context.
    public enum Fallback: Sendable, Hashable {
        /// Record nothing.
        case ignore
        /// Start and end a child span named `feature_flag.evaluation` holding the event.
        case childSpan
    }

    /// The event's name, OpenTelemetry's feature-flag evaluation event.
    public static let eventName = "feature_flag.evaluation"

    /// The value of `feature_flag.provider.name`.
    public let providerName: String
    /// Whether `feature_flag.context.id` (the visitor id) is recorded.
    public let recordsVisitorId: Bool
    /// What happens when the tracer cannot find the current span.
    public let fallback: Fallback
    private let tracer: (any Tracer)?

    /// A hook recording on `tracer`'s spans, or on the bootstrapped `InstrumentationSystem.tracer`
    /// (read at each evaluation) when `tracer` is `nil`.
    public init(providerName: String = "Convert", recordsVisitorId: Bool = true, fallback: Fallback = .childSpan,
                tracer: (any Tracer)? = nil) {
        self.providerName = providerName
        self.recordsVisitorId = recordsVisitorId
        self.fallback = fallback
        self.tracer = tracer
    }

    /// The stage the hook records in.
    public var stages: EvaluationHookStages { .finally }
    /// The hook reads a feature's own reason and variant, not its carriers'.
    public var readsFeatureExperiences: Bool { false }

    /// Records the evaluation on the current span. A span that records nothing (no tracer
    /// bootstrapped, a trace sampled out) is handed nothing, and the event is not built.
    public func finally(_ context: HookContext, details: EvaluationDetails) {
        // A span's context is what its tracer put in the service context, so an empty one names
        // no span: no tracer bootstrapped (Hummingbird's TracingMiddleware still makes a no-op
        // span per request), or no trace begun. Checked first: looking the tracer up costs far
        // more (a lock and dynamic casts) than the rest of this hook when nothing is recorded.
        guard let serviceContext = ServiceContext.current, !serviceContext.isEmpty else { return }
        let tracer = tracer ?? InstrumentationSystem.tracer
        if tracer is NoOpTracer { return }
        if let span = tracer.activeSpan(identifiedBy: serviceContext) {
            guard span.isRecording else { return }
            span.addEvent(SpanEvent(name: Self.eventName, attributes: attributes(context, details)))
        } else if fallback == .childSpan {
            let span = tracer.startSpan(Self.eventName, context: serviceContext)
            if span.isRecording {
                span.addEvent(SpanEvent(name: Self.eventName, attributes: attributes(context, details)))
            }
            span.end()
        }
    }

    /// The event's attributes for one evaluation, built at their final size.
    public func attributes(_ context: HookContext, _ details: EvaluationDetails) -> SpanAttributes {
        var attributes = SpanAttributes()
        attributes.reserveCapacity(7)
        attributes.set(OTelAttribute.featureFlag.key, value: .string(context.key))
        attributes.set(OTelAttribute.featureFlag.provider.name, value: .string(providerName))
        if let variant = details.variant {
            attributes.set(OTelAttribute.featureFlag.result.variant, value: .string(variant))
        }
        attributes.set(OTelAttribute.featureFlag.result.reason, value: .string(details.reason.snakeCaseName))
        if recordsVisitorId {
            attributes.set(OTelAttribute.featureFlag.context.id, value: .string(context.visitorId))
        }
        if let code = details.errorCode {
            attributes.set(OTelAttribute.error.type, value: .string(code.openTelemetryValue))
            attributes.set(OTelAttribute.featureFlag.error.message, value: .string(code.rawValue))
        }
        return attributes
    }
}

extension EvaluationErrorCode {
    /// The error as OpenTelemetry's `error.type` names feature-flag errors (OpenFeature's codes).
    var openTelemetryValue: String {
        switch self {
        case .flagNotFound: "flag_not_found"
        case .notReady: "provider_not_ready"
        case .invalidVisitorId: "invalid_context"
        case .typeMismatch: "type_mismatch"
        }
    }
}
