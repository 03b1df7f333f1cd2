import ConvertBucketing
import ConvertCore
import ConvertEnvironment
import ConvertEvents
import ConvertMemory
import ConvertModel
import ConvertRules
import ConvertStorage
import ConvertTesting
import ConvertTracking
import Foundation
import Testing

@Suite struct ExperienceDecisionTests {
    @Test func qualifyingVisitorsGetTheBucketedVariationAndOneTrackingEvent() async throws {
        let harness = try await started()
        let config = try #require(harness.sdk.config)
        for i in 0..<40 {
            let visitor = "visitor-\(i)"
            let context = qualifyingContext(harness, visitor)
            let variation = await context.runExperience("test-experience-ab-fullstack-1")
            let expected = try expectedVariation(config, experienceKey: "test-experience-ab-fullstack-1", visitorId: visitor)
            #expect(variation?.id == expected)
            #expect(variation?.isStored == false)
            #expect(variation?.experienceId == "100334665")
            let events = harness.sink.events(for: visitor)
            #expect(events.map(\.payload) == [.bucketing(experienceId: "100334665", variationId: expected!)])
            #expect(events.first?.accountId == "10035569")
            #expect(events.first?.projectId == "10034190")
        }
    }

    @Test func stickyDecisionIsReturnedWithoutANewEvent() async throws {
        let harness = try await started()
        let context = qualifyingContext(harness, "sticky")
        let first = await context.runExperience("test-experience-ab-fullstack-1")
        let second = await context.runExperience("test-experience-ab-fullstack-1")
        let other = await qualifyingContext(harness, "sticky").runExperience("test-experience-ab-fullstack-1")
        #expect(first != nil)
        #expect(second?.id == first?.id)
        #expect(second?.isStored == true)
        #expect(other?.id == first?.id)
        #expect(harness.sink.events(for: "sticky").count == 1)
        let stored = harness.store.data(for: "10035569-10034190-sticky")
        #expect(stored?.bucketing == ["100334665": first!.id])
    }

    @Test func locationGate() async throws {
        let harness = try await started()
        let context = harness.sdk.createContext(visitorId: "loc", attributes: qualifying)
        #expect(await context.runExperience("test-experience-ab-fullstack-1") == nil)
        context.setLocationProperties(["location": "nowhere"])
        #expect(await context.runExperience("test-experience-ab-fullstack-1") == nil)
        context.setLocationProperties(["feature": 3])
        #expect(await context.runExperience("test-experience-ab-fullstack-1") != nil)
        #expect(harness.store.data(for: "10035569-10034190-loc")?.locations == ["dasadsa"])
    }

    @Test func audienceGate() async throws {
        let harness = try await started()
        let chrome = harness.sdk.createContext(visitorId: "aud", attributes: ["desktop": true, "browser": "ch"])
        chrome.setLocationProperties(pricing)
        #expect(await chrome.runExperience("test-experience-ab-fullstack-1") == nil)
        // Nil without an error: the debug log says which gate answered.
        let said = harness.logs.records.filter { $0.level == .debug && $0.metadata["convert.reason"] == "audienceNotMatched" }
        #expect(said.map(\.message) == ["experience test-experience-ab-fullstack-1: no audience matched the visitor's attributes, no variation"])
        #expect(said.first?.metadata["convert.visitor"] == "aud")
        let mobile = harness.sdk.createContext(visitorId: "aud", attributes: ["mobile": "TRUE"])
        mobile.setLocationProperties(pricing)
        #expect(await mobile.runExperience("test-experience-ab-fullstack-1") != nil)
        #expect(harness.sink.events.count == 1)
    }

    @Test func permanentAudienceIsNotRecheckedForABucketedVisitor() async throws {
        let harness = try await started()
        let context = qualifyingContext(harness, "perm")
        let first = try #require(await context.runExperience("test-experience-ab-fullstack-1"))
        context.setAttributes(["desktop": "false", "browser": "CH"])
        #expect(await context.runExperience("test-experience-ab-fullstack-1")?.id == first.id)
        let trace = await context.explainExperience("test-experience-ab-fullstack-1")
        #expect(trace.steps.contains(.audience(id: "10033684", key: "adv-audience", permanent: true, outcome: nil)))
    }

    @Test func transientAudienceIsRecheckedForABucketedVisitor() async throws {
        let harness = try await started { json in
            try edit(&json, "audiences", at: 0) { $0["type"] = "transient" }
        }
        let context = qualifyingContext(harness, "trans")
        let first = try #require(await context.runExperience("test-experience-ab-fullstack-1"))
        context.setAttributes(["desktop": "false", "browser": "CH"])
        #expect(await context.runExperience("test-experience-ab-fullstack-1") == nil)
        context.setAttributes(["desktop": "true", "browser": "FF"])
        #expect(await context.runExperience("test-experience-ab-fullstack-1")?.id == first.id)
        #expect(harness.sink.events.count == 1)
    }

    @Test func audienceMatchingAllNeedsEveryAudience() async throws {
        let harness = try await started { json in
            try edit(&json, "experiences", at: 0) { e in
                e["audiences"] = ["10033684", "extra-aud"]
                e["settings"] = ["matching_options": ["audiences": "all"]]
            }
            var audiences = try #require(json["audiences"] as? [[String: Any]])
            audiences.append(["id": "extra-aud", "key": "plan-pro", "type": "transient", "rules": ["OR": [["AND": [["OR_WHEN": [
                ["rule_type": "generic_text_key_value", "key": "plan", "value": "pro",
                 "matching": ["match_type": "equals", "negated": false]]]]]]]]])
            json["audiences"] = audiences
        }
        let context = qualifyingContext(harness, "all")
        #expect(await context.runExperience("test-experience-ab-fullstack-1") == nil)
        context.setAttributes(["plan": "pro"])
        #expect(await context.runExperience("test-experience-ab-fullstack-1") != nil)
    }

    @Test func environmentFilter() async throws {
        let staging = try await started()
        let context = staging.sdk.createContext(visitorId: "env", attributes: qualifying)
        context.setLocationProperties(["screen": "home"])
        #expect(await context.runExperience("test-experience-ab-fullstack-3") == nil)
        #expect(await context.explainExperience("test-experience-ab-fullstack-3").reason == .environmentMismatch)
        let production = try await started(environment: "production")
        let prod = production.sdk.createContext(visitorId: "env", attributes: qualifying)
        prod.setLocationProperties(["screen": "home"])
        #expect(await prod.runExperience("test-experience-ab-fullstack-3") != nil)
        #expect(await prod.runExperience("test-experience-ab-fullstack-1") == nil)
    }

    @Test func archivedExperienceIsNeverDecided() async throws {
        let harness = try await started { json in json["archived_experiences"] = ["100334665"] }
        #expect(await qualifyingContext(harness, "arch").runExperience("test-experience-ab-fullstack-1") == nil)
        #expect(harness.sink.events.isEmpty)
    }

    @Test func segmentGatedExperienceNeedsTheSegment() async throws {
        let harness = try await started(environment: "production")
        let context = harness.sdk.createContext(visitorId: "seg")
        context.setLocationProperties(["location": "statistics"])
        #expect(await context.runExperience("sample_ab_test") == nil)
        #expect(await context.explainExperience("sample_ab_test").reason == .segmentNotMatched)
        #expect(await context.runCustomSegments(["test-segment-1"]) == ["10033690"])
        #expect(await context.runExperience("sample_ab_test") != nil)
    }

    @Test func unknownKeyAndSiteArea() async throws {
        let harness = try await started(.jsSDKTestConfig)
        let context = harness.sdk.createContext(visitorId: "site", attributes: ["varName3": "something"])
        #expect(await context.runExperience("no-such-experience") == nil)
        #expect(harness.logs.contains("no experience has the key \"no-such-experience\""))
        #expect(await context.runExperience("test-experience-ab-fullstack-2") == nil)
        context.setLocationProperties(["url": "https://convert.com/"])
        #expect(await context.runExperience("test-experience-ab-fullstack-2") != nil)
        #expect(await context.runExperience("test-experience-ab-fullstack-4") == nil)
    }

    @Test func runExperiencesDecidesEveryQualifyingExperience() async throws {
        let harness = try await started()
        let context = qualifyingContext(harness, "many")
        let variations = await context.runExperiences()
        #expect(variations.map(\.experienceKey) == ["test-experience-ab-fullstack-1", "test-experience-ab-fullstack-4"])
        #expect(harness.sink.events(for: "many").count == 2)
    }

    @Test func trackingControls() async throws {
        let harness = try await started()
        #expect(await harness.sdk.isTrackingEnabled())
        _ = await qualifyingContext(harness, "t1").runExperience("test-experience-ab-fullstack-1", enableTracking: false)
        #expect(harness.sink.events.isEmpty)
        #expect(harness.store.data(for: "10035569-10034190-t1")?.bucketing.isEmpty == false)
        await harness.sdk.setTrackingEnabled(false)
        #expect(await !harness.sdk.isTrackingEnabled())
        _ = await qualifyingContext(harness, "t2").runExperience("test-experience-ab-fullstack-1")
        #expect(harness.sink.events.isEmpty)
        await harness.sdk.setTrackingEnabled(true)
        _ = await qualifyingContext(harness, "t2").runExperience("test-experience-ab-fullstack-1")
        #expect(harness.sink.events.isEmpty, "events suppressed while off are not replayed")
        _ = await qualifyingContext(harness, "t3").runExperience("test-experience-ab-fullstack-1")
        #expect(harness.sink.events.count == 1)
        let off = try await started(networkTracking: false)
        await off.sdk.setTrackingEnabled(true)
        _ = await qualifyingContext(off, "t4").runExperience("test-experience-ab-fullstack-1")
        #expect(off.sink.events.isEmpty)
        #expect(await !off.sdk.isTrackingEnabled())
    }

    @Test func explainNamesEveryCheckAndTheDecidingLeaf() async throws {
        let harness = try await started()
        let context = qualifyingContext(harness, "explain")
        let before = harness.store.data(for: "10035569-10034190-explain")
        let trace = await context.explainExperience("test-experience-ab-fullstack-1")
        #expect(trace.reason == .bucketed)
        guard case .storedDecision(nil) = trace.steps.first else {
            Issue.record("first step should be the (absent) stored decision: \(trace.steps)")
            return
        }
        let locations = trace.steps.compactMap { step -> (String, Bool)? in
            if case .location(let id, _, let outcome) = step { return (id, outcome.matched) }
            return nil
        }
        #expect(locations.map(\.0) == ["1003350", "1003351", "1003352", "10036409"])
        #expect(locations.map(\.1) == [false, false, true, false])
        let audience = trace.steps.compactMap { step -> RuleOutcome? in
            if case .audience(_, _, _, let outcome) = step { return outcome }
            return nil
        }.first
        #expect(audience?.matched == true)
        #expect(audience?.decidingLeaf == RuleLocation(block: 0, group: 1, leaf: 0))
        guard case .bucket(let value, let ranges, let variationId)? = trace.steps.last else {
            Issue.record("last step should be bucketing")
            return
        }
        #expect(ranges.count == 2)
        #expect(variationId == trace.variationId)
        #expect(ranges.contains { Double(value) >= $0.lower && Double(value) < $0.upper && $0.variationId == variationId })
        #expect(harness.sink.events.isEmpty, "explaining tracks nothing")
        #expect(harness.store.data(for: "10035569-10034190-explain") == before, "explaining stores nothing")
        #expect(before?.bucketing.isEmpty != false && before?.locations.isEmpty != false)
    }

    @Test func decisionsDegradeBeforeReady() async throws {
        let harness = TestSDK(data: nil)
        let context = qualifyingContext(harness, "early")
        #expect(await context.runExperience("test-experience-ab-fullstack-1") == nil)
        #expect(await context.runExperiences().isEmpty)
        #expect(await context.runFeature("feature-1").status == .disabled)
        #expect(await context.runFeatures().isEmpty)
        #expect(await context.trackConversion("button-primary-click") == .notReady)
        #expect(await context.explainExperience("test-experience-ab-fullstack-1").reason == .notReady)
        #expect(harness.logs.contains("before the SDK is ready"))
        await harness.source.push(try Fixtures.data(.cdnConfigBaseline))
        try await harness.sdk.ready(timeout: .patience)
        #expect(await context.runExperience("test-experience-ab-fullstack-1") != nil)
    }
}
