import ConvertBucketing
import ConvertRules

/// How several audiences or locations of an experience combine.
public enum MatchingOption: String, Sendable, Hashable {
    /// At least one must match (also the default for a missing or unknown value).
    case any
    /// Every one must match.
    case all

    init(_ raw: String?) {
        self = raw == "all" ? .all : .any
    }
}

/// An A/B test or feature rollout: who qualifies, and how they split over variations.
public struct Experience: Sendable, Hashable {
    public let id: String
    public let key: String
    public let name: String?
    public let type: String?
    public let status: String?
    /// `version` read as a number (a numeric string counts); decides the bucket layout.
    public let version: Double?
    /// The environment the experience runs in, if it is limited to one.
    public let environment: String?
    public let environments: [String]
    public let locationIds: [String]
    /// `site_area` rules, used when `locations` is empty.
    public let siteArea: RuleSet?
    /// Ids of audiences and segments, as written.
    public let audienceIds: [String]
    public let goalIds: [String]
    public let audienceMatching: MatchingOption
    public let locationMatching: MatchingOption
    public let variations: [Variation]
    /// The precomputed bucket ranges of ``variations``.
    public let bucketTable: BucketTable
    /// Indexes into ``ProjectConfig/audiences`` of the ids in ``audienceIds`` that name audiences.
    public internal(set) var audienceIndexes: [Int] = []
    /// The ids in ``audienceIds`` that name segments.
    public internal(set) var segmentIds: [String] = []
    /// Indexes into ``ProjectConfig/locations`` of the ids in ``locationIds`` that name locations.
    public internal(set) var locationIndexes: [Int] = []
    private let variationIndexById: [String: Int]

    public init(id: String, key: String, name: String? = nil, type: String? = nil, status: String? = nil,
                version: Double? = nil, environment: String? = nil, environments: [String] = [],
                locationIds: [String] = [], siteArea: RuleSet? = nil, audienceIds: [String] = [],
                goalIds: [String] = [], audienceMatching: MatchingOption = .any,
                locationMatching: MatchingOption = .any, variations: [Variation]) {
        self.id = id
        self.key = key
        self.name = name
        self.type = type
        self.status = status
        self.version = version
        self.environment = environment
        self.environments = environments
        self.locationIds = locationIds
        self.siteArea = siteArea
        self.audienceIds = audienceIds
        self.goalIds = goalIds
        self.audienceMatching = audienceMatching
        self.locationMatching = locationMatching
        self.variations = variations
        self.bucketTable = BucketTable(
            arms: variations.map { BucketArm(id: $0.id, trafficAllocation: $0.trafficAllocation, isActive: $0.isActive) },
            layout: BucketLayout(version: version))
        var index: [String: Int] = [:]
        for (i, v) in variations.enumerated() where index[v.id] == nil { index[v.id] = i }
        variationIndexById = index
    }

    /// The variation with this id, if the experience has it.
    public func variation(id: String) -> Variation? {
        variationIndexById[id].map { variations[$0] }
    }

    /// The variation with this key, if the experience has it.
    public func variation(key: String) -> Variation? {
        variations.first { $0.key == key }
    }

    static func decode(_ f: Fields, _ log: inout DegradationLog) -> Result<Experience, ElementRejection> {
        guard let id = f.identifier("id") else { return .failure(ElementRejection("experience has no id")) }
        guard let key = f.identifier("key") else { return .failure(ElementRejection("experience has no key")) }
        let matching = f.object("settings", &log)?.object("matching_options", &log)
        return .success(Experience(
            id: id, key: key,
            name: f.string("name", &log),
            type: f.string("type", &log),
            status: f.string("status", &log),
            version: f.number("version", &log),
            environment: f.string("environment", &log),
            environments: f.identifiers("environments", &log),
            locationIds: f.identifiers("locations", &log),
            siteArea: f.rules("site_area", &log),
            audienceIds: f.identifiers("audiences", &log),
            goalIds: f.identifiers("goals", &log),
            audienceMatching: MatchingOption(matching?.string("audiences", &log)),
            locationMatching: MatchingOption(matching?.string("locations", &log)),
            variations: f.elements("variations", &log, Variation.decode)))
    }
}
