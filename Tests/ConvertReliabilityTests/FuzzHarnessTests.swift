import ConvertBucketing
import ConvertModel
import ConvertRules
import ConvertTesting
import Foundation
import Testing

/// The seeded mutation harness: every hostile variant of the fixture configs either decodes
/// (its degradations listed) or fails with a typed error — never a crash, never a hang.
@Suite struct FuzzHarnessTests {
    /// Iterations per fixture in CI; the libFuzzer target runs the same checks without bound.
    static let iterations = 500

    @Test(arguments: Fixtures.File.configs)
    func mutatedConfigsDecodeOrFailTyped(file: Fixtures.File) throws {
        let original = [UInt8](try Fixtures.data(file))
        var mutator = ConfigMutator(seed: UInt64(file.rawValue.utf8.count) &* 7919)
        var decoded = 0, rejected = 0, degraded = 0
        var slowest: Duration = .zero
        for iteration in 0..<Self.iterations {
            let input = mutator.mutate(original)
            let start = ContinuousClock.now
            switch FuzzCheck.run(input) {
            case .decoded(let degradations):
                decoded += 1
                if degradations > 0 { degraded += 1 }
            case .rejected:
                rejected += 1
            }
            let took = ContinuousClock.now - start
            slowest = max(slowest, took)
            #expect(took < .seconds(2), "iteration \(iteration) took \(took)")
        }
        #expect(decoded + rejected == Self.iterations)
        #expect(decoded > Self.iterations / 10, "the mutations keep many documents decodable")
        #expect(rejected > 0, "the mutations produce invalid documents too")
        #expect(degraded > 0, "some decodable documents are degraded, and say so")
    }

    @Test func regressionSeeds() {
        let seeds: [String] = [
            #"{"account_id":"1","project":{"id":"2"},"experiences":[{"id":"e","key":"k","version":1e999,"variations":[{"id":"v","traffic_allocation":1e999}]}]}"#,
            #"{"account_id":"1","project":{"id":"2"},"experiences":[{"id":"e","key":"k","variations":[{"id":"v","traffic_allocation":-1e308}]}]}"#,
            #"{"account_id":"1","project":{"id":"2"},"audiences":[{"id":"a","rules":{"OR":[{"AND":[{"OR_WHEN":[{"key":"k","value":"(unclosed[regex","matching":{"match_type":"regexMatches","negated":true}}]}]}]}}]}"#,
            #"{"account_id":[1,{}],"account_id":"1","project":{"id":"2"}}"#,
            "{\"account_id\":\"1\",\"project\":{\"id\":\"\u{0}\"}}",
        ]
        for seed in seeds {
            _ = FuzzCheck.run(Array(seed.utf8))
        }
        guard case .decoded = FuzzCheck.run(Array(seeds[0].utf8)) else {
            Issue.record("a non-finite number is ignored, not fatal")
            return
        }
    }
}
