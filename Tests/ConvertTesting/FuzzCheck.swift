import ConvertBucketing
import ConvertModel
import ConvertRules
import Foundation

/// What the fuzz checks do with one input: decode it, and when it decodes, use everything in
/// it — evaluate every rule set, bucket visitors in every experience, stringify every value.
public enum FuzzCheck {
    /// How an input ended: decoded (and used without a crash), or rejected with a typed error.
    public enum Result: Sendable {
        /// The input decoded, with this many degradations reported.
        case decoded(degradations: Int)
        /// The input was refused with this error.
        case rejected(ConfigDecodingError)
    }

    private static let probes: [[String: JSONValue]] = [
        [:],
        ["location": "pricing", "browser": "FF", "desktop": "true", "feature": 3, "url": "https://convert.com/"],
        ["key": ["a", 1, .null], "k": ["x": 1], "age": "1,000", "n": 1e308, "s": .string(String(repeating: "é", count: 300))],
    ]

    /// Runs the checks on `bytes`; traps (a test failure) only on a real bug.
    public static func run(_ bytes: [UInt8]) -> Result {
        let decoded: DecodedConfig
        do throws(ConfigDecodingError) {
            decoded = try ConfigDecoder.decode(bytes: bytes)
        } catch {
            _ = error.description
            return .rejected(error)
        }
        let config = decoded.config
        var rules: [RuleSet] = config.audiences.compactMap(\.rules) + config.segments.compactMap(\.rules)
        rules += config.locations.compactMap(\.rules) + config.goals.compactMap(\.rules)
        rules += config.experiences.compactMap(\.siteArea)
        for ruleSet in rules {
            for data in probes {
                let outcome = ruleSet.evaluate(data) { key in config.experience(key: key).map { _ in true } }
                _ = outcome.decidingLeaf.map { ruleSet[$0] }
            }
            for leaf in ruleSet.leaves { _ = leaf.value?.javaScriptString }
        }
        for experience in config.experiences {
            for visitor in ["a", "visitor-1", "é🚀"] {
                if let id = experience.bucketTable.variation(experienceId: experience.id, visitorId: visitor) {
                    precondition(experience.variation(id: id) != nil, "bucketing chose a variation the experience lacks")
                }
            }
            _ = experience.version.map(JavaScriptNumber.string)
        }
        for degradation in decoded.degradations { _ = degradation.description }
        return .decoded(degradations: decoded.degradations.count)
    }
}
