import ConvertCore
import ConvertEvents
import ConvertMemory
import ConvertModel
import ConvertRules
import ConvertSynchronization
import ConvertTesting
import Foundation
import Testing

/// A visitor drawn from values the fixtures' rules test (browsers, devices, locations, segments),
/// so that decisions go every way: excluded, bucketed, stored, preview-free.
private func randomVisitor(_ rng: inout SeededGenerator) -> (attributes: [String: JSONValue], properties: [String: JSONValue]) {
    var attributes: [String: JSONValue] = [:]
    if Bool.random(using: &rng) { attributes["browser"] = .string(["FF", "CH", "IE", "ff"].randomElement(using: &rng)!) }
    if Bool.random(using: &rng) { attributes["desktop"] = .string(["true", "false"].randomElement(using: &rng)!) }
    if Bool.random(using: &rng) { attributes["mobile"] = .bool(Bool.random(using: &rng)) }
    if Bool.random(using: &rng) { attributes["country"] = .string(["US", "RO", "DE"].randomElement(using: &rng)!) }
    if Int.random(in: 0..<4, using: &rng) == 0 { attributes["customSegments"] = .array([.string("200299434")]) }
    if Bool.random(using: &rng) { attributes["age"] = .number(Double(Int.random(in: 10...80, using: &rng))) }
    if Bool.random(using: &rng) { attributes["varName3"] = .string(["something", "else"].randomElement(using: &rng)!) }
    var properties: [String: JSONValue] = [:]
    if Int.random(in: 0..<5, using: &rng) > 0 {
        properties["location"] = .string(["pricing", "home", "features", "checkout"].randomElement(using: &rng)!)
    }
    if Bool.random(using: &rng) { properties["feature"] = .string(String(Int.random(in: 1...4, using: &rng))) }
    if Bool.random(using: &rng) { properties["url"] = .string(["https://convert.com/", "https://convert.com/pricing"].randomElement(using: &rng)!) }
    return (attributes, properties)
}

@Suite struct SynchronousAPITests {
    @Test(arguments: Fixtures.File.configs)
    func synchronousAndAsyncCallsDecideAlike(file: Fixtures.File) async throws {
        let sync = try TestSDK(fixture: file), async = try TestSDK(fixture: file)
        try await sync.sdk.ready(timeout: .patience)
        try await async.sdk.ready(timeout: .patience)
        let config = try #require(sync.sdk.config)
        var rng = SeededGenerator(seed: UInt64(file.rawValue.utf8.count) &* 40_503)
        var bucketed = 0
        for n in 0..<150 {
            let visitor = randomVisitor(&rng)
            let id = "visitor-\(n % 120)"  // some visitors return, so stored decisions are compared too
            let a = sync.sdk.createContext(visitorId: id, attributes: visitor.attributes)
            let b = async.sdk.createContext(visitorId: id, attributes: visitor.attributes)
            a.setLocationProperties(visitor.properties)
            b.setLocationProperties(visitor.properties)
            for experience in config.experiences {
                #expect(a.explanation(forExperience: experience.key) == (await b.explainExperience(experience.key)))
                let variation = a.variation(forExperience: experience.key, enableTracking: n % 3 != 0)
                #expect(variation == (await b.runExperience(experience.key, enableTracking: n % 3 != 0)))
                if variation != nil { bucketed += 1 }
            }
            #expect(a.variations() == (await b.runExperiences()))
            for feature in config.features {
                #expect(a.feature(feature.key, typeCasting: n % 2 == 0) == (await b.runFeature(feature.key, typeCasting: n % 2 == 0)))
                #expect(a.explanation(forFeature: feature.key) == (await b.explainFeature(feature.key)))
            }
            #expect(a.features() == (await b.runFeatures()))
            #expect(a.feature("no-such-feature") == (await b.runFeature("no-such-feature")))
            #expect(a.variation(forExperience: "no-such-experience") == nil)
        }
        #expect(sync.sink.events == async.sink.events, "the same events, in the same order")
        #expect(sync.store.count == async.store.count)
        if !config.experiences.isEmpty && file != .rulesTestConfig {
            #expect(bucketed > 0, "the visitors reach real decisions")
        }
    }

    @Test func synchronousCallsBeforeReadinessDegrade() {
        let harness = TestSDK(data: nil)
        let context = harness.sdk.createContext(visitorId: "early")
        #expect(context.variation(forExperience: "test-experience-ab-fullstack-1") == nil)
        #expect(context.variations().isEmpty)
        #expect(context.features().isEmpty)
        #expect(!context.feature("feature-1").isEnabled)
        #expect(context.explanation(forExperience: "x").reason == .notReady)
        #expect(harness.sink.events.isEmpty)
    }

    /// Eight threads (not tasks) deciding through the synchronous API for shared and own visitors
    /// agree with a serial run, store each visitor once and track each first decision once.
    @Test func eightThreadsAgreeWithASerialRun() async throws {
        let visitors = (0..<60).map { "visitor-\($0)" }
        @Sendable func run(_ harness: TestSDK, _ visitor: String) -> [String?] {
            let context = harness.sdk.createContext(visitorId: visitor, attributes: qualifying)
            context.setLocationProperties(pricing)
            var out = context.variations().map { Optional($0.id) }
            out.append(context.variation(forExperience: "test-experience-ab-fullstack-1")?.id)
            out += context.features().map { $0.isEnabled ? $0.variationId : nil }
            return out
        }
        let serial = try TestSDK(fixture: .cdnConfigBaseline)
        try await serial.sdk.ready(timeout: .patience)
        let expected = Dictionary(uniqueKeysWithValues: visitors.map { ($0, run(serial, $0)) })

        let shared = try TestSDK(fixture: .cdnConfigBaseline)
        try await shared.sdk.ready(timeout: .patience)
        let mismatches = Locked<[String]>([])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let remaining = Locked(8)
            for t in 0..<8 {
                let thread = Thread {
                    var rng = SeededGenerator(seed: UInt64(t + 1))
                    for visitor in visitors.shuffled(using: &rng) where run(shared, visitor) != expected[visitor] {
                        mismatches.withValue { $0.append(visitor) }
                    }
                    if remaining.withValue({ $0 -= 1; return $0 == 0 }) { done.resume() }
                }
                thread.start()
            }
        }
        #expect(mismatches.value.isEmpty, "threads disagreed with the serial run for \(mismatches.value)")
        #expect(Set(shared.sink.events) == Set(serial.sink.events))
        #expect(shared.sink.events.count == serial.sink.events.count, "each first decision tracked once")
        #expect(shared.store.count == visitors.count)
    }
}
