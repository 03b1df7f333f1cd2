import ConvertCore
import ConvertEvents
import ConvertTracking
import ConvertModel
import ConvertRules
import ConvertSynchronization
import ConvertTesting
import Foundation
import Testing

private let experienceOne = "test-experience-ab-fullstack-1"

/// Records every call, in order, as "name stage key reason".
private final class Recorder: EvaluationHook {
    let name: String
    let calls = Locked<[String]>([])
    let throwsIn: String?
    let stages: EvaluationHookStages
    init(_ name: String, throwsIn: String? = nil, stages: EvaluationHookStages = .all) {
        self.name = name
        self.throwsIn = throwsIn
        self.stages = stages
    }

    struct Boom: Error {}
    private func note(_ text: String, _ stage: String) throws {
        calls.withValue { $0.append("\(name) \(text)") }
        if stage == throwsIn { throw Boom() }
    }

    func before(_ context: HookContext) throws { try note("before \(context.key)", "before") }
    func after(_ context: HookContext, details: EvaluationDetails) throws {
        try note("after \(context.key) \(details.reason.rawValue)", "after")
    }
    func error(_ context: HookContext, details: EvaluationDetails) throws {
        try note("error \(context.key) \(details.errorCode?.rawValue ?? "-")", "error")
    }
    func finally(_ context: HookContext, details: EvaluationDetails) throws {
        try note("finally \(context.key) \(details.variant ?? "none")", "finally")
    }
    func tracked(_ event: TrackingEvent) throws { try note("tracked \(event.eventType)", "tracked") }
}

/// Keeps each feature's detail, reading or not reading the carriers' details.
private final class FeatureDetails: EvaluationHook {
    let readsFeatureExperiences: Bool
    let seen = Locked<[String: FeatureDetail]>([:])
    init(readsExperiences: Bool) { readsFeatureExperiences = readsExperiences }
    var stages: EvaluationHookStages { .finally }
    func finally(_ context: HookContext, details: EvaluationDetails) {
        if case .feature(let detail) = details { seen.withValue { $0[context.key] = detail } }
    }
}

@Suite struct HookTests {
    @Test func hooksThatDoNotReadCarriersSeeEachFeaturesOwnReasonAndValue() async throws {
        for visitor in ["summary-a", "summary-b", "summary-c", "summary-d"] {
            let full = try await started(), summary = try await started()
            let reading = FeatureDetails(readsExperiences: true), notReading = FeatureDetails(readsExperiences: false)
            full.sdk.addHook(reading)
            summary.sdk.addHook(notReading)
            // A hook handed no detail does not make the others pay for one it could read.
            summary.sdk.addHook(Recorder("tracked only", stages: .tracked))
            for harness in [full, summary] {
                let context = qualifyingContext(harness, visitor)
                _ = context.variation(forExperience: experienceOne)
                _ = context.features()
                _ = context.features()
            }
            let expected = reading.seen.value, got = notReading.seen.value
            #expect(expected.count > 1 && expected.keys.sorted() == got.keys.sorted())
            for (key, detail) in expected {
                let summarized = try #require(got[key])
                #expect(summarized.value == detail.value && summarized.reason == detail.reason
                        && summarized.errorCode == detail.errorCode, "\(key) for \(visitor)")
                #expect(summarized.experiences.isEmpty)
            }
            #expect(expected.values.contains { !$0.experiences.isEmpty }, "a hook that reads them gets the carriers")
            #expect(expected.values.contains { $0.value.isEnabled && $0.reason != .default }, "an enabled feature's reason")
        }
    }

    @Test func aHookIsCalledOnlyInTheStagesItDeclares() async throws {
        let harness = try await started()
        let finallyOnly = Recorder("finally", stages: .finally), trackedOnly = Recorder("tracked", stages: .tracked)
        let every = Recorder("every")
        harness.sdk.addHook(finallyOnly)
        harness.sdk.addHook(trackedOnly)
        let context = qualifyingContext(harness, "staged")
        context.addHook(every)
        let variation = try #require(context.variation(forExperience: experienceOne))
        let variant = variation.key ?? variation.id
        #expect(finallyOnly.calls.value == ["finally finally \(experienceOne) \(variant)"])
        #expect(trackedOnly.calls.value == ["tracked tracked bucketing"])
        #expect(every.calls.value == ["every before \(experienceOne)", "every after \(experienceOne) targetingMatch",
                                      "every finally \(experienceOne) \(variant)"], "the default is every stage")
        _ = context.feature("feature-1")
        #expect(finallyOnly.calls.value.count == 2 && finallyOnly.calls.value.last?.hasPrefix("finally finally feature-1") == true)
        #expect(trackedOnly.calls.value.allSatisfy { $0.hasPrefix("tracked tracked") })
    }

    @Test func hooksRunBeforeAfterAndFinallyAroundADecisionAndSeeItsTracking() async throws {
        let harness = try await started()
        let sdkHook = Recorder("sdk"), contextHook = Recorder("ctx")
        harness.sdk.addHook(sdkHook)
        let context = qualifyingContext(harness, "hooked")
        context.addHook(contextHook)
        let variation = try #require(context.variation(forExperience: experienceOne))
        let variant = variation.key ?? variation.id
        #expect(sdkHook.calls.value == ["sdk before \(experienceOne)", "sdk tracked bucketing",
                                        "sdk after \(experienceOne) targetingMatch", "sdk finally \(experienceOne) \(variant)"])
        #expect(contextHook.calls.value == ["ctx before \(experienceOne)", "ctx after \(experienceOne) targetingMatch",
                                            "ctx finally \(experienceOne) \(variant)"], "context hooks see evaluations only")
        _ = await context.trackConversion("button-primary-click")
        #expect(sdkHook.calls.value.filter { $0 == "sdk tracked conversion" }.count == 1)

        let other = harness.sdk.createContext(visitorId: "plain", attributes: qualifying)
        other.setLocationProperties(pricing)
        #expect(other.variation(forExperience: experienceOne)?.id
                == (try expectedVariation(#require(harness.sdk.config), experienceKey: experienceOne, visitorId: "plain")),
                "hooks do not change decisions")
    }

    @Test func withHooksEveryExperienceIsDecidedEvenWhenTwoShareAKey() async throws {
        // The decoder keeps experiences whose keys repeat; `variations()` decides each of them.
        let sharedKey: (inout [String: Any]) throws -> Void = { json in
            try edit(&json, "experiences", at: 1) { $0["key"] = "test-experience-ab-fullstack-1" }
        }
        let plain = try await started(environment: "staging", networkTracking: false, mutate: sharedKey)
        let hooked = try await started(environment: "staging", networkTracking: false, mutate: sharedKey)
        let recorder = Recorder("r")
        hooked.sdk.addHook(recorder)
        let expected = qualifyingContext(plain, "twin-keys").variations().map(\.experienceId)
        let decided = qualifyingContext(hooked, "twin-keys").variations().map(\.experienceId)
        #expect(decided == expected)
        #expect(Set(expected).count == expected.count, "each experience once: \(expected)")
    }

    @Test func errorsReachTheErrorStageAndAFeatureIsHookedToo() async throws {
        let harness = try await started()
        let hook = Recorder("h")
        harness.sdk.addHook(hook)
        let context = qualifyingContext(harness, "errors")
        #expect(context.variation(forExperience: "nope") == nil)
        #expect(hook.calls.value == ["h before nope", "h error nope flagNotFound", "h finally nope none"])
        hook.calls.set([])
        _ = context.feature("feature-1")
        #expect(hook.calls.value.first == "h before feature-1")
        #expect(hook.calls.value.contains("h after feature-1 targetingMatch"))

        let early = TestSDK(data: nil)
        let waiting = Recorder("w")
        early.sdk.addHook(waiting)
        _ = early.sdk.createContext(visitorId: "early").variationDetail(forExperience: experienceOne)
        #expect(waiting.calls.value == ["w before \(experienceOne)", "w error \(experienceOne) notReady",
                                        "w finally \(experienceOne) none"])
    }

    @Test func aThrowingHookChangesNothingAndIsLoggedOncePerInterval() async throws {
        let harness = try await started()
        harness.sdk.addHook(Recorder("bad", throwsIn: "after"))
        let healthy = Recorder("good")
        harness.sdk.addHook(healthy)
        for n in 0..<5 {
            let context = qualifyingContext(harness, "v\(n)")
            let got = context.variation(forExperience: experienceOne)?.id
            #expect(got == (try expectedVariation(#require(harness.sdk.config), experienceKey: experienceOne, visitorId: "v\(n)")))
        }
        #expect(healthy.calls.value.filter { $0.hasPrefix("good finally") }.count == 5, "the next hooks still run")
        #expect(harness.logs.messages.filter { $0.contains("threw in after") }.count == 1)
    }

    @Test func theLoggingHookWritesOneLinePerEvaluation() async throws {
        let harness = try await started()
        let lines = RecordingLogSink()
        harness.sdk.addHook(LoggingHook(sink: lines))
        _ = qualifyingContext(harness, "logged").variation(forExperience: experienceOne)
        #expect(lines.messages.contains { $0.hasPrefix("experience \(experienceOne) for logged: ") && $0.hasSuffix("(targetingMatch)") })
        #expect(lines.messages.contains("tracking bucketing for logged"))
    }
}
