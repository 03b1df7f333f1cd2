/// One variation as bucketing sees it: an id, its traffic share and whether it takes traffic.
public struct BucketArm: Sendable, Hashable {
    /// The variation id.
    public let id: String
    /// The traffic share in percent (may be fractional), as JavaScript's `Number()` reads the
    /// config's `traffic_allocation`: `nil` when absent, NaN when present but not numeric.
    public let trafficAllocation: Double?
    /// Whether the arm takes traffic (a variation whose status is absent or `"running"`).
    public let isActive: Bool

    /// An arm; `nil` or NaN allocations are read as the JavaScript SDK reads them.
    public init(id: String, trafficAllocation: Double?, isActive: Bool = true) {
        self.id = id
        self.trafficAllocation = trafficAllocation
        self.isActive = isActive
    }

    /// The anchored layout's allocation: the absent/NaN default of 100 applied.
    public var allocation: Double {
        guard let trafficAllocation, !trafficAllocation.isNaN else { return 100 }
        return trafficAllocation
    }
}

/// How arms are laid out over the 10,000 buckets.
public enum BucketLayout: String, Sendable, Hashable {
    /// Arms packed one after another from 0; raising an allocation moves later arms ("allocation flip").
    case packed
    /// Each arm anchored at its share of the total; growing an arm only adds visitors to it.
    case anchored

    /// The layout an experience of this version uses: anchored above 11, packed otherwise
    /// (including a missing or NaN version).
    package init(version: Double?) {
        if let version, version > 11 { self = .anchored } else { self = .packed }
    }
}
