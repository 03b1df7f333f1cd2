import ConvertSwiftSDK
import ConvertTesting
import ConvertTracing
import InMemoryTracing
import Instrumentation
import Testing
import Tracing

@Suite struct TracingTests {
    static func readySDK(_ hook: TracingHook) async throws -> ConvertSwiftSDK {
        let harness = TestSDK(data: ConvertSwiftSDK.sampleConfig)
        try await harness.sdk.ready(timeout: .seconds(30))
        harness.sdk.addHook(hook)
        return harness.sdk
    }

    @Test func anEvaluationIsAnEventOnTheCurrentSpanWithTheFeatureFlagConventions() async throws {
        let tracer = InMemoryTracer()
        let sdk = try await Self.readySDK(TracingHook(tracer: tracer))
        let context = sdk.createContext(visitorId: "visitor-42", attributes: ["desktop": true, "browser": "FF"])
        context.setLocationProperties(["location": "pricing"])

        let variation = tracer.withSpan("GET /pricing") { _ in
            context.variation(forExperience: "test-experience-ab-fullstack-1")
        }
        let span = try #require(tracer.finishedSpans.first)
        #expect(tracer.finishedSpans.count == 1)
        #expect(span.operationName == "GET /pricing")
        let event = try #require(span.events.first)
        #expect(event.name == "feature_flag.evaluation")
        let attributes = event.attributes
        #expect(attributes.get("feature_flag.key") == "test-experience-ab-fullstack-1")
        #expect(attributes.get("feature_flag.provider.name") == "Convert")
        #expect(attributes.get("feature_flag.result.variant") == .string(try #require(variation?.keyOrId)))
        #expect(attributes.get("feature_flag.result.reason") == "targeting_match")
        #expect(attributes.get("feature_flag.context.id") == "visitor-42")
        #expect(attributes.get("error.type") == nil)
    }

    @Test func anErrorCarriesItsTypeAndTheVisitorIdCanBeLeftOut() async throws {
        let tracer = InMemoryTracer()
        let sdk = try await Self.readySDK(TracingHook(recordsVisitorId: false, tracer: tracer))
        let context = sdk.createContext(visitorId: "visitor-42")
        tracer.withSpan("request") { _ in
            _ = context.feature("no-such-feature")
        }
        let event = try #require(tracer.finishedSpans.first?.events.first)
        #expect(event.attributes.get("feature_flag.key") == "no-such-feature")
        #expect(event.attributes.get("feature_flag.result.reason") == "error")
        #expect(event.attributes.get("error.type") == "flag_not_found")
        #expect(event.attributes.get("feature_flag.error.message") == "flagNotFound")
        #expect(event.attributes.get("feature_flag.context.id") == nil)
        #expect(event.attributes.get("feature_flag.result.variant") == nil)
    }

    @Test func outsideATraceNothingIsRecorded() async throws {
        let tracer = InMemoryTracer()
        let sdk = try await Self.readySDK(TracingHook(tracer: tracer))
        _ = sdk.createContext(visitorId: "visitor-42").feature("feature-1")
        #expect(tracer.finishedSpans.isEmpty)
        #expect(tracer.activeSpans.isEmpty)

        // An empty service context (what a no-op tracer's span carries) names no span: outside any
        // trace too, and no child span is started to hold the event.
        ServiceContext.$current.withValue(.topLevel) {
            _ = sdk.createContext(visitorId: "visitor-42").feature("feature-1")
        }
        #expect(tracer.finishedSpans.isEmpty)
    }

    @Test func aSpanThatRecordsNothingIsHandedNothing() async throws {
        // A trace sampled out (or no tracer bootstrapped): the request has a span, and it records nothing.
        for findsSpans in [true, false] {
            let tracer = SampledOutTracer(findsSpans: findsSpans)
            let sdk = try await Self.readySDK(TracingHook(tracer: tracer))
            let context = sdk.createContext(visitorId: "visitor-42", attributes: ["desktop": true, "browser": "FF"])
            context.setLocationProperties(["location": "pricing"])
            let features = tracer.withSpan("GET /") { _ in
                _ = context.variation(forExperience: "test-experience-ab-fullstack-1")
                return context.features()
            }
            #expect(!features.isEmpty)
            #expect(tracer.handed.withValue { $0 } == SampledOutTracer.Handed(), "findsSpans: \(findsSpans)")
        }

        // The same calls on spans that record: one event per evaluation.
        let recording = InMemoryTracer()
        let sdk = try await Self.readySDK(TracingHook(tracer: recording))
        let context = sdk.createContext(visitorId: "visitor-42", attributes: ["desktop": true, "browser": "FF"])
        context.setLocationProperties(["location": "pricing"])
        let features = recording.withSpan("GET /") { _ in
            _ = context.variation(forExperience: "test-experience-ab-fullstack-1")
            return context.features()
        }
        let events = try #require(recording.finishedSpans.first).events
        #expect(events.count == 1 + features.count)
        #expect(events.allSatisfy { $0.attributes.get("feature_flag.provider.name") == "Convert" })
    }

    @Test func whenTheTracerCannotFindTheSpanAChildSpanHoldsTheEvent() async throws {
        let tracer = InMemoryTracer()
        let sdk = try await Self.readySDK(TracingHook(tracer: tracer))
        let context = sdk.createContext(visitorId: "visitor-42")
        // A span already ended is no longer found: the context names a span the tracer cannot give.
        let parent = tracer.startSpan("ended")
        parent.end()
        ServiceContext.$current.withValue(parent.context) {
            _ = context.feature("feature-1")
        }
        let child = try #require(tracer.finishedSpans.first { $0.operationName == "feature_flag.evaluation" })
        #expect(child.parentSpanID == parent.spanID)
        #expect(child.events.first?.name == "feature_flag.evaluation")
        #expect(child.events.first?.attributes.get("feature_flag.key") == "feature-1")

        let ignoring = try await Self.readySDK(TracingHook(fallback: .ignore, tracer: tracer))
        tracer.clearFinishedSpans()
        ServiceContext.$current.withValue(parent.context) {
            _ = ignoring.createContext(visitorId: "visitor-42").feature("feature-1")
        }
        #expect(tracer.finishedSpans.isEmpty)
    }
}

/// A tracer whose spans are sampled out: they carry a context (found by `activeSpan` when
/// `findsSpans`) and record nothing. It counts what the code under test hands them anyway.
struct SampledOutTracer: Tracer {
    struct Handed: Equatable, Sendable {
        var events = 0
        var attributeWrites = 0
    }

    let findsSpans: Bool
    let handed = Protected(Handed())
    private let base = InMemoryTracer()

    func startSpan<Instant: TracerInstant>(_ operationName: String, context: @autoclosure () -> ServiceContext,
                                           ofKind kind: SpanKind, at instant: @autoclosure () -> Instant,
                                           function: String, file fileID: String, line: UInt) -> SampledOutSpan {
        SampledOutSpan(base: base.startSpan(operationName, context: context(), ofKind: kind, at: instant(),
                                                   function: function, file: fileID, line: line), handed: handed)
    }

    func activeSpan(identifiedBy context: ServiceContext) -> SampledOutSpan? {
        guard findsSpans else { return nil }
        return base.activeSpan(identifiedBy: context).map { SampledOutSpan(base: $0, handed: handed) }
    }

    func forceFlush() {}

    func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {}

    func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract.Carrier == Carrier {}
}

/// A span of ``SampledOutTracer``.
struct SampledOutSpan: Span {
    let base: InMemorySpan
    let handed: Protected<SampledOutTracer.Handed>

    var context: ServiceContext { base.context }
    var isRecording: Bool { false }
    var operationName: String {
        get { base.operationName }
        nonmutating set { base.operationName = newValue }
    }
    var attributes: SpanAttributes {
        get { SpanAttributes() }
        nonmutating set { handed.withValue { $0.attributeWrites += 1 } }
    }

    func setStatus(_ status: SpanStatus) {}
    func addEvent(_ event: SpanEvent) { handed.withValue { $0.events += 1 } }
    func addLink(_ link: SpanLink) {}
    func recordError<Instant: TracerInstant>(_ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant) {}
    func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) { base.end(at: instant()) }
}
