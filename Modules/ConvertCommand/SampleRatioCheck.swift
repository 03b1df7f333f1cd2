import ConvertBucketing
import ConvertSwiftSDK
import Foundation

/// One experience's split of synthetic visitors against the split its allocation promises, with
/// a chi-square goodness-of-fit test: a sample-ratio mismatch shows bucketing that does not
/// honour the configured traffic.
struct SampleRatioCheck {
    /// One outcome: a variation, or no variation (the traffic left out).
    struct Arm {
        /// The variation's id; `nil` for visitors bucketed into no variation.
        let variationId: String?
        let variationKey: String?
        /// The share of bucket values that lead here, as bucketing computes it.
        let expectedShare: Double
        let observed: Int
    }

    let experienceKey: String
    let layout: BucketLayout
    let visitors: Int
    let arms: [Arm]
    let chiSquare: Double
    let degreesOfFreedom: Int
    /// The probability of a split at least this far from the expected one if bucketing follows
    /// the allocation; `1` with a single possible outcome.
    let pValue: Double

    /// Below this p-value the split is reported as a mismatch.
    static let threshold = 0.001

    var isMismatch: Bool { pValue < Self.threshold }

    /// Buckets `visitors` synthetic visitors (`srm-0`, `srm-1`, …) into `experience`.
    init(experience: Experience, visitors: Int) {
        let table = experience.bucketTable
        // The expected shares are exact: every one of the 10,000 bucket values, through the table.
        var expected = [Int](repeating: 0, count: table.ranges.count + 1)
        for value in 0..<BucketValue.scale { expected[(table.rangeIndex(forValue: value) ?? table.ranges.count)] += 1 }
        var observed = [Int](repeating: 0, count: table.ranges.count + 1)
        for i in 0..<visitors {
            let value = BucketValue.of(experienceId: experience.id, visitorId: "srm-\(i)")
            observed[table.rangeIndex(forValue: value) ?? table.ranges.count] += 1
        }
        let arms = (0...table.ranges.count).compactMap { index -> Arm? in
            let share = Double(expected[index]) / Double(BucketValue.scale)
            guard index < table.ranges.count else {
                return share > 0 || observed[index] > 0
                    ? Arm(variationId: nil, variationKey: nil, expectedShare: share, observed: observed[index]) : nil
            }
            let id = table.ranges[index].variationId
            return Arm(variationId: id, variationKey: experience.variations.first { $0.id == id }?.key,
                       expectedShare: share, observed: observed[index])
        }
        self.init(experienceKey: experience.key, layout: table.layout, visitors: visitors, arms: arms)
    }

    /// The check of observed counts against expected shares.
    init(experienceKey: String, layout: BucketLayout, visitors: Int, arms: [Arm]) {
        self.experienceKey = experienceKey
        self.layout = layout
        self.visitors = visitors
        self.arms = arms
        let (statistic, cells) = Self.chiSquare(observed: arms.map(\.observed), expectedShares: arms.map(\.expectedShare))
        chiSquare = statistic
        degreesOfFreedom = max(cells - 1, 0)
        pValue = degreesOfFreedom == 0 ? (statistic.isInfinite ? 0 : 1) : Self.survival(chiSquare: statistic, degreesOfFreedom: degreesOfFreedom)
    }

    /// Pearson's statistic over the outcomes that can happen, and how many can; an observation
    /// of an outcome that cannot happen makes it infinite.
    static func chiSquare(observed: [Int], expectedShares: [Double]) -> (statistic: Double, cells: Int) {
        let total = Double(observed.reduce(0, +))
        var statistic = 0.0, cells = 0
        for (count, share) in zip(observed, expectedShares) {
            guard share > 0 else {
                if count > 0 { statistic = .infinity }
                continue
            }
            cells += 1
            let expected = share * total
            statistic += (Double(count) - expected) * (Double(count) - expected) / expected
        }
        return (statistic, cells)
    }

    /// `P(X ≥ chiSquare)` for a chi-square variable with `degreesOfFreedom`: the regularized upper
    /// incomplete gamma function `Q(k/2, x/2)`.
    static func survival(chiSquare: Double, degreesOfFreedom: Int) -> Double {
        guard chiSquare.isFinite else { return chiSquare > 0 ? 0 : 1 }
        guard chiSquare > 0, degreesOfFreedom > 0 else { return 1 }
        return regularizedUpperGamma(Double(degreesOfFreedom) / 2, chiSquare / 2)
    }

    /// `Q(a, x) = Γ(a, x) / Γ(a)`: by its series below `a + 1`, by its continued fraction above
    /// (each converges fast on its side).
    static func regularizedUpperGamma(_ a: Double, _ x: Double) -> Double {
        guard x > 0 else { return 1 }
        let logPrefix = -x + a * log(x) - lgamma(a)
        if x < a + 1 {
            // P(a, x) = e^-x x^a / Γ(a+1) · Σ x^n / ((a+1)…(a+n))
            var term = 1 / a, sum = term, denominator = a
            for _ in 0..<1000 {
                denominator += 1
                term *= x / denominator
                sum += term
                if abs(term) < abs(sum) * 1e-15 { break }
            }
            return max(0, min(1, 1 - sum * exp(logPrefix)))
        }
        // Lentz's method on Q(a, x) = e^-x x^a / Γ(a) · 1/(x+1-a- 1·(1-a)/(x+3-a- 2·(2-a)/(x+5-a- …)))
        let tiny = 1e-300
        var b = x + 1 - a, c = 1 / tiny, d = 1 / b, fraction = d
        for i in 1...1000 {
            let an = -Double(i) * (Double(i) - a)
            b += 2
            d = an * d + b
            if abs(d) < tiny { d = tiny }
            c = b + an / c
            if abs(c) < tiny { c = tiny }
            d = 1 / d
            let step = d * c
            fraction *= step
            if abs(step - 1) < 1e-15 { break }
        }
        return max(0, min(1, exp(logPrefix) * fraction))
    }

    /// The report's lines for people.
    var text: [String] {
        var lines = ["\(experienceKey): \(visitors) visitors, layout \(layout.rawValue)"]
        for arm in arms {
            let name = arm.variationId.map { id in arm.variationKey.map { "\($0) (\(id))" } ?? id } ?? "no variation"
            let share = visitors > 0 ? Double(arm.observed) / Double(visitors) : 0
            lines.append("  \(name): expected \(Self.percent(arm.expectedShare)), observed \(arm.observed) (\(Self.percent(share)))")
        }
        lines.append("  chi-square \(String(format: "%.4f", chiSquare)), df \(degreesOfFreedom), p \(Self.probability(pValue))")
        if isMismatch {
            lines.append("  WARNING: sample ratio mismatch in \(experienceKey) (p < \(Self.threshold)): "
                         + "the split does not follow the configured allocation")
        }
        return lines
    }

    /// The report as JSON.
    var json: JSONValue {
        let arms: [JSONValue] = arms.map { arm in
            var row: [String: JSONValue] = ["variationId": arm.variationId.map(JSONValue.string) ?? .null,
                                            "expectedShare": .number(arm.expectedShare),
                                            "observed": .number(Double(arm.observed))]
            if let key = arm.variationKey { row["variationKey"] = .string(key) }
            return .object(row)
        }
        return ["experienceKey": .string(experienceKey), "layout": .string(layout.rawValue),
                "visitors": .number(Double(visitors)), "arms": .array(arms),
                "chiSquare": chiSquare.isFinite ? .number(chiSquare) : .null,
                "degreesOfFreedom": .number(Double(degreesOfFreedom)), "pValue": .number(pValue),
                "sampleRatioMismatch": .bool(isMismatch)]
    }

    private static func percent(_ share: Double) -> String { String(format: "%.2f%%", share * 100) }

    private static func probability(_ p: Double) -> String {
        p < 0.0001 ? String(format: "%.2e", p) : String(format: "%.4f", p)
    }
}
