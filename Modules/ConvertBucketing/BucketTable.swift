import ConvertHashing

/// The bucket ranges of an experience's arms, computed once and reused for every visitor.
///
/// ```swift
/// let table = BucketTable(arms: [BucketArm(id: "a", trafficAllocation: 50),
///                                BucketArm(id: "b", trafficAllocation: 50)], layout: .packed)
/// table.variation(forValue: BucketValue.of(experienceId: "e1", visitorId: "v1"))
/// ```
public struct BucketTable: Sendable, Hashable {
    /// One arm's half-open bucket range `[lower, upper)`.
    public struct Range: Sendable, Hashable {
        /// The variation a bucket value in the range picks.
        public let variationId: String
        /// The first bucket value in the range, on the 0–10,000 scale (``BucketValue/scale``).
        public let lower: Double
        /// The end of the range, excluded.
        public let upper: Double

        /// The range `[lower, upper)` of `variationId`.
        package init(variationId: String, lower: Double, upper: Double) {
            self.variationId = variationId
            self.lower = lower
            self.upper = upper
        }
    }

    /// The layout the table was built with.
    public let layout: BucketLayout
    /// The ranges in the order they are tried; the first that holds a value wins.
    public let ranges: [Range]

    /// Builds the table for `arms` (in config order) under `layout`.
    public init(arms: [BucketArm], layout: BucketLayout) {
        self.layout = layout
        switch layout {
        case .packed: ranges = Self.packed(arms)
        case .anchored: ranges = Self.anchored(arms)
        }
    }

    /// The variation whose range holds `value`, or `nil` when no range does.
    @inlinable
    package func variation(forValue value: Int) -> String? {
        let v = Double(value)
        for range in ranges where range.lower <= v && v < range.upper {
            return range.variationId
        }
        return nil
    }

    /// The position in ``ranges`` of the range holding `value`, or `nil` when no range does.
    @inlinable
    package func rangeIndex(forValue value: Int) -> Int? {
        let v = Double(value)
        for (i, range) in ranges.enumerated() where range.lower <= v && v < range.upper {
            return i
        }
        return nil
    }

    /// The variation for `visitorId` in `experienceId`, hashing as ``BucketValue/of(experienceId:visitorId:seed:)``.
    @inlinable
    public func variation(experienceId: String, visitorId: String, seed: UInt32 = MurmurHash3.defaultSeed) -> String? {
        variation(forValue: BucketValue.of(experienceId: experienceId, visitorId: visitorId, seed: seed))
    }

    private static func packed(_ arms: [BucketArm]) -> [Range] {
        var weights: [(id: String, weight: Double)] = []
        var position: [String: Int] = [:]
        for arm in arms where arm.isActive && !arm.id.isEmpty {
            if let t = arm.trafficAllocation, !t.isNaN, t <= 0 { continue }
            // JS weighs an absent allocation 100 and keeps a NaN one: the running total turns
            // NaN, so that arm and every arm after it can never win.
            let weight = arm.trafficAllocation ?? 100
            // A JS object keeps a repeated key at its first position with its last value.
            if let at = position[arm.id] {
                weights[at].weight = weight
            } else {
                position[arm.id] = weights.count
                weights.append((arm.id, weight))
            }
        }
        var cumulative = 0.0
        return JavaScriptKeyOrder.sorted(weights, id: \.id).map { entry in
            let lower = cumulative
            cumulative += entry.weight * 100
            return Range(variationId: entry.id, lower: lower, upper: cumulative)
        }
    }

    private static func anchored(_ arms: [BucketArm]) -> [Range] {
        let arms = arms.filter { !$0.id.isEmpty }
        let total = arms.reduce(0.0) { $0 + $1.allocation }
        guard total > 0 else { return [] }
        var cumulative = 0.0
        var ranges: [Range] = []
        for arm in arms {
            let anchor = cumulative / total * Double(BucketValue.scale)
            let width = arm.isActive ? arm.allocation * 100 : 0
            if width > 0 {
                ranges.append(Range(variationId: arm.id, lower: anchor, upper: anchor + width))
            }
            cumulative += arm.allocation
        }
        return ranges
    }
}
