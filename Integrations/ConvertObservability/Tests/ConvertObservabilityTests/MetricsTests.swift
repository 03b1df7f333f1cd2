import ConvertMetrics
import ConvertServiceLifecycle
import ConvertSwiftSDK
import ConvertTesting
import Metrics
import MetricsTestKit
import ServiceLifecycleTestKit
import Testing

@Suite struct MetricsTests {
    static func readySDK() async throws -> TestSDK {
        let harness = TestSDK(data: ConvertSwiftSDK.sampleConfig)
        try await harness.sdk.ready(timeout: .seconds(30))
        return harness
    }

    static func readmeContext(_ sdk: ConvertSwiftSDK, _ visitorId: String = "visitor-42") -> ConvertContext {
        let context = sdk.createContext(visitorId: visitorId, attributes: ["desktop": true, "browser": "FF"])
        context.setLocationProperties(["location": "pricing"])
        return context
    }

    @Test func evaluationsExposuresAndConversionsAreCountedUnderTheDocumentedNames() async throws {
        let metrics = TestMetrics()
        let harness = try await Self.readySDK()
        harness.sdk.addHook(MetricsHook(factory: metrics))
        let context = Self.readmeContext(harness.sdk)

        let variation = try #require(context.variation(forExperience: "test-experience-ab-fullstack-1"))
        let variant = variation.key ?? variation.id
        _ = context.variation(forExperience: "test-experience-ab-fullstack-1")
        _ = context.variation(forExperience: "no-such-experience")

        let fresh = try metrics.expectCounter("convert_evaluations_total", [
            ("key", "test-experience-ab-fullstack-1"), ("variant", variant), ("kind", "experience"),
            ("reason", "targeting_match")])
        #expect(fresh.totalValue == 1)
        let sticky = try metrics.expectCounter("convert_evaluations_total", [
            ("key", "test-experience-ab-fullstack-1"), ("variant", variant), ("kind", "experience"), ("reason", "cached")])
        #expect(sticky.totalValue == 1)
        let missing = try metrics.expectCounter("convert_evaluations_total", [
            ("key", "no-such-experience"), ("variant", "none"), ("kind", "experience"), ("reason", "error")])
        #expect(missing.totalValue == 1)

        _ = context.feature("feature-2")
        #expect(metrics.counters(label: "convert_evaluations_total").contains {
            $0.dimensions.contains { $0 == ("kind", "feature") } && $0.dimensions.contains { $0 == ("key", "feature-2") }
        })

        let exposure = try metrics.expectCounter("convert_exposures_total", [
            ("experience", variation.experienceId), ("variation", variation.id)])
        #expect(exposure.totalValue == 1)
        #expect(metrics.counterTotal(label: "convert_exposures_total") == Int64(harness.sink.events.filter {
            $0.eventType == "bucketing" }.count))

        let result = await context.trackConversion("button-primary-click", goalData: [GoalDataItem(.amount, 19.99)])
        #expect(result == .tracked(eventCount: 2))
        let goalId = try #require(harness.sdk.config?.goal(key: "button-primary-click")?.id)
        #expect(try metrics.expectCounter("convert_conversions_total", [("goal", goalId), ("type", "conversion")]).totalValue == 1)
        #expect(try metrics.expectCounter("convert_conversions_total", [("goal", goalId), ("type", "transaction")]).totalValue == 1)

        // Calls by outcome: the one above, a duplicate, an unknown goal.
        #expect(await context.trackConversion("button-primary-click") == .duplicate)
        #expect(await context.trackConversion("no-such-goal") == .unknownGoal)
        for (goal, outcome) in [("button-primary-click", "tracked"), ("button-primary-click", "duplicate"), ("no-such-goal", "refused")] {
            #expect(try metrics.expectCounter("convert_conversion_calls_total", [("goal", goal), ("result", outcome)]).totalValue == 1)
        }
    }

    @Test func keysPastTheirBoundCountAsOther() async throws {
        let metrics = TestMetrics()
        let harness = try await Self.readySDK()
        harness.sdk.addHook(MetricsHook(limits: .init(keys: 2, variantsPerKey: 1), factory: metrics))
        let context = Self.readmeContext(harness.sdk)
        for key in ["missing-1", "missing-2", "missing-3", "missing-4"] {
            _ = context.variation(forExperience: key)
        }
        let keys = Set(metrics.counters(label: "convert_evaluations_total").compactMap { counter in
            counter.dimensions.first { $0.0 == "key" }?.1
        })
        #expect(keys == ["missing-1", "missing-2", "other"])
        #expect(try metrics.expectCounter("convert_evaluations_total", [
            ("key", "other"), ("variant", "none"), ("kind", "experience"), ("reason", "error")]).totalValue == 2)
    }

    @Test func variantsPastTheirBoundCountAsOther() async throws {
        let metrics = TestMetrics()
        let harness = try await Self.readySDK()
        harness.sdk.addHook(MetricsHook(limits: .init(keys: 10, variantsPerKey: 1), factory: metrics))
        var variations: Set<String> = []
        for index in 0..<40 {
            let variation = Self.readmeContext(harness.sdk, "visitor-\(index)").variation(forExperience: "test-experience-ab-fullstack-1")
            variations.insert(variation?.keyOrId ?? "none")
        }
        #expect(variations.count >= 2)
        let variants = Set(metrics.counters(label: "convert_evaluations_total").compactMap { counter in
            counter.dimensions.first { $0.0 == "variant" }?.1
        })
        #expect(variants.count == 2)
        #expect(variants.contains("other"))
        #expect(metrics.counterTotal(label: "convert_evaluations_total") == 40)
    }

    @Test func theReporterTurnsCountersAndStatusIntoMetrics() async throws {
        let metrics = TestMetrics()
        let harness = TestSDK(data: nil)
        let reporter = MetricsReporter(sdk: harness.sdk, factory: metrics)

        reporter.report()
        #expect(try metrics.expectGauge("convert_status", [("status", "starting")]).lastValue == 1)
        #expect(try metrics.expectGauge("convert_status", [("status", "ready")]).lastValue == 0)
        #expect(try metrics.expectGauge("convert_queue_depth").lastValue == 0)
        #expect(metrics.recorders(label: "convert_config_age_seconds").allSatisfy { $0.values.isEmpty })

        await harness.source.push(ConvertSwiftSDK.sampleConfig)
        try await harness.sdk.ready(timeout: .seconds(30))
        for index in 0..<4 {
            _ = Self.readmeContext(harness.sdk, "visitor-\(index)").variation(forExperience: "test-experience-ab-fullstack-1")
        }
        let sent = harness.sink.counters.sent
        #expect(sent == 4)

        reporter.report()
        reporter.report()  // nothing new: counters do not grow again
        #expect(try metrics.expectCounter("convert_events_sent_total").totalValue == Int64(sent))
        #expect(try metrics.expectGauge("convert_status", [("status", "ready")]).lastValue == 1)
        #expect(try metrics.expectGauge("convert_status", [("status", "starting")]).lastValue == 0)
        let age = try #require(try metrics.expectGauge("convert_config_age_seconds").lastValue)
        #expect(age >= 0 && age < 600)

        _ = await harness.sdk.shutdown(timeout: .seconds(5))
        _ = Self.readmeContext(harness.sdk, "visitor-late").variation(forExperience: "test-experience-ab-fullstack-1")
        reporter.report()
        #expect(try metrics.expectCounter("convert_events_dropped_total").totalValue == 1)
        #expect(try metrics.expectCounter("convert_config_fetch_failures_total").totalValue == 0)
    }

    @Test func runReportsUntilCancelledThenOnceMore() async throws {
        let metrics = TestMetrics()
        let harness = try await Self.readySDK()
        let reporter = MetricsReporter(sdk: harness.sdk, interval: .milliseconds(10), factory: metrics)
        let running = Task { await reporter.run() }
        try await Task.sleep(for: .milliseconds(100))
        running.cancel()
        await running.value
        let reports = try metrics.expectGauge("convert_queue_depth").values.count
        #expect(reports >= 2)
    }

    @Test func insideTheServiceTheLastReportFollowsTheShutdown() async throws {
        let metrics = TestMetrics()
        // Its queue holds events until the shutdown delivers them.
        let (sdk, _) = ServiceLifecycleTests.holdingSDK()
        try await sdk.ready(timeout: .seconds(30))
        let reporter = MetricsReporter(sdk: sdk, interval: .seconds(3600), factory: metrics)
        let service = ConvertService(sdk: sdk, logger: ServiceLifecycleTests.quiet, whileRunning: [reporter.run])
        try await testGracefulShutdown { trigger in
            let running = Task { try await service.run() }
            ServiceLifecycleTests.decide(sdk, visitors: 3)
            #expect(sdk.trackingCounters.sent == 0)
            trigger.triggerGracefulShutdown()
            try await running.value
        }
        #expect(try metrics.expectCounter("convert_events_sent_total").totalValue == 3)
        #expect(try metrics.expectGauge("convert_queue_depth").lastValue == 0)
        // The shutdown's delivery: its requests counted, their mean duration timed once.
        let requests = try metrics.expectCounter("convert_delivery_requests_total").totalValue
        #expect(requests >= 1 && requests == Int64(sdk.trackingCounters.requests))
        let durations = try metrics.expectTimer("convert_delivery_duration_seconds").values
        #expect(durations.count == 1 && durations[0] >= 0 && durations[0] < 10_000_000_000)
    }
}
