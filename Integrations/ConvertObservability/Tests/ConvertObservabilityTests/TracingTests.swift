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
