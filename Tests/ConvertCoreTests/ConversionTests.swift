import ConvertCore
import ConvertEvents
import ConvertModel
import ConvertRules
import ConvertTesting
import ConvertTracking
import ConvertVisitor
import Foundation
import Testing

@Suite struct ConversionTests {
    @Test func firstConversionIsSentAndRepeatsAreDuplicates() async throws {
        let harness = try await started()
        let context = harness.sdk.createContext(visitorId: "buyer")
        #expect(await context.trackConversion("button-primary-click") == .tracked(eventCount: 1))
        #expect(await context.trackConversion("button-primary-click") == .duplicate)
        #expect(harness.sink.events.map(\.payload) == [.conversion(goalId: "100322784", goalData: nil, bucketingData: nil)])
    }

    @Test func goalDataAddsATransactionOnceUnlessForced() async throws {
        let harness = try await started()
        let context = qualifyingContext(harness, "shopper")
        let variation = try #require(await context.runExperience("test-experience-ab-fullstack-1"))
        harness.sink.reset()
        let data = [GoalDataItem(.amount, 19.99), GoalDataItem(.transactionId, "T-1"), GoalDataItem(.customDimension1, ["a", "b"])]
        #expect(await context.trackConversion("button-primary-click", goalData: data) == .tracked(eventCount: 2))
        let bucketing = ["100334665": variation.id]
        #expect(harness.sink.events.map(\.payload) == [
            .conversion(goalId: "100322784", goalData: nil, bucketingData: bucketing),
            .conversion(goalId: "100322784", goalData: data, bucketingData: bucketing),
        ])
        #expect(await context.trackConversion("button-primary-click", goalData: data) == .duplicate)
        #expect(await context.trackConversion("button-primary-click", goalData: data, forceMultipleTransactions: true)
                == .tracked(eventCount: 1))
        #expect(harness.sink.events.last?.payload == .conversion(goalId: "100322784", goalData: data, bucketingData: bucketing))
        #expect(await context.trackConversion("button-primary-click", forceMultipleTransactions: true) == .duplicate)
    }

    @Test func emptyGoalDataIsStillATransaction() async throws {
        // The JavaScript SDK sends a transaction for any goal data given, an empty list included.
        let harness = try await started()
        let context = harness.sdk.createContext(visitorId: "empty-data")
        #expect(await context.trackConversion("decrease-bounce-rate", goalData: []) == .tracked(eventCount: 2))
        #expect(harness.sink.events.map(\.payload) == [
            .conversion(goalId: "100322782", goalData: nil, bucketingData: nil),
            .conversion(goalId: "100322782", goalData: [], bucketingData: nil),
        ])
    }

    @Test func dedupSurvivesANewContextForTheSameVisitor() async throws {
        let harness = try await started()
        #expect(await harness.sdk.createContext(visitorId: "same").trackConversion("decrease-bounce-rate") == .tracked(eventCount: 1))
        #expect(await harness.sdk.createContext(visitorId: "same").trackConversion("decrease-bounce-rate") == .duplicate)
        #expect(await harness.sdk.createContext(visitorId: "other").trackConversion("decrease-bounce-rate") == .tracked(eventCount: 1))
    }

    @Test func ruleDataMustMatchTheGoalRules() async throws {
        let harness = try await started()
        let context = harness.sdk.createContext(visitorId: "rules")
        #expect(await context.trackConversion("button-primary-click", ruleData: ["action": "browse"]) == .rulesNotMatched)
        #expect(harness.sink.events.isEmpty)
        #expect(await context.trackConversion("button-primary-click", ruleData: ["action": "BUY"]) == .tracked(eventCount: 1))
        // A goal without rules matches no rule data (the JavaScript SDK's `if (!goal.rules) return`).
        #expect(await context.trackConversion("increase-engagement", ruleData: ["anything": 1]) == .rulesNotMatched)
        #expect(await context.trackConversion("increase-engagement") == .tracked(eventCount: 1))
    }

    @Test func badInputsGiveClearResults() async throws {
        let harness = try await started()
        let context = harness.sdk.createContext(visitorId: "bad")
        #expect(await context.trackConversion("no-such-goal") == .unknownGoal)
        #expect(harness.logs.contains("no goal has the key \"no-such-goal\""))
        #expect(await context.trackConversion("button-primary-click", goalData: [GoalDataItem(.amount, .number(.nan))])
                == .invalidGoalData("amount is not a finite number"))
        #expect(await context.trackConversion("button-primary-click", goalData: [GoalDataItem(.amount, .number(.infinity))])
                == .invalidGoalData("amount is not a finite number"))
        #expect(await context.trackConversion("button-primary-click", goalData: [GoalDataItem(.productsCount, ["x": 1])])
                == .invalidGoalData("productsCount must be a number, a string or an array of strings"))
        #expect(harness.sink.events.isEmpty)
        #expect(await context.trackConversion("button-primary-click") == .tracked(eventCount: 1), "rejections recorded nothing")
    }

    @Test func trackingOffRecordsDedupButSendsNothing() async throws {
        let harness = try await started()
        await harness.sdk.setTrackingEnabled(false)
        let context = harness.sdk.createContext(visitorId: "quiet")
        #expect(await context.trackConversion("button-primary-click") == .trackingDisabled)
        await harness.sdk.setTrackingEnabled(true)
        #expect(await context.trackConversion("button-primary-click") == .duplicate)
        #expect(harness.sink.events.isEmpty)
    }

    @Test func conversionEventsCarrySegments() async throws {
        let harness = try await started()
        let context = harness.sdk.createContext(visitorId: "segmented")
        await context.setDefaultSegments(VisitorSegments(country: "US", browser: "FF"))
        await context.trackConversion("button-primary-click")
        #expect(harness.sink.events.first?.segments == VisitorSegments(country: "US", browser: "FF"))
    }
}
