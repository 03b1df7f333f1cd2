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
///
/// Immutable and shared: decisions read an experience in place through one reference.
public final class Experience: Sendable, Hashable {
    /// The experience's id: bucketing hashes it with the visitor id, and tracking reports it.
    public let id: String
    /// The key `variation(forExperience:)` takes.
    public let key: String
    /// The name shown in the Convert app; `nil` when absent.
    public let name: String?
    /// The experience's type (e.g. `"a/b_fullstack"`), uninterpreted; `nil` when absent.
    public let type: String?
    /// The status as written (e.g. `"active"`), not read by decisions: archived experiences are
    /// listed apart (``ProjectConfig/archivedExperienceIds``, ``isArchived``).
    public let status: String?
    /// `version` as JavaScript's `Number()` reads it (`nil` when absent, NaN when not numeric);
    /// above 11 the anchored bucket layout is used.
    public let version: Double?
    /// The environment the experience runs in, if it is limited to one; an empty or null
    /// `environment` limits nothing (the JavaScript SDK only checks a truthy one).
    public let environment: String?
    /// `environments` as written; decisions read ``environment`` only.
    public let environments: [String]
    /// Ids of the locations the experience runs in; one matching location is enough.
    public let locationIds: [String]
    /// `site_area` rules, used when `locations` is empty.
    public let siteArea: RuleSet?
    /// Ids of audiences and segments, as written.
    public let audienceIds: [String]
    /// Ids of the goals the experience reports on.
    public let goalIds: [String]
    /// Whether one of the audiences (`any`, also when the config says nothing) or all of them must
    /// match.
    public let audienceMatching: MatchingOption
    /// `matching_options.locations` as written. Decisions never read it: as in the JavaScript SDK,
    /// one matching location is enough whatever it says.
    public let locationMatching: MatchingOption
    /// The arms, in config order.
    public let variations: [Variation]
    /// The precomputed bucket ranges of ``variations``.
    public let bucketTable: BucketTable
    /// Whether the config lists the experience as archived; set when a ``ProjectConfig`` is
    /// assembled.
    public let isArchived: Bool
    /// Indexes into ``ProjectConfig/audiences`` of the ids in ``audienceIds`` that name audiences.
    package let audienceIndexes: [Int]
    /// The ids in ``audienceIds`` that name segments.
    public let segmentIds: [String]
    /// Indexes into ``ProjectConfig/locations`` of the ids in ``locationIds`` that name locations.
    package let locationIndexes: [Int]
    /// For each range of ``bucketTable``, the index of its variation in ``variations`` (-1: none).
    package let rangeVariations: [Int]
    private let variationIndexById: [String: Int]

    /// An experience as the config describes it; the bucket table is computed here from the
    /// variations and `version`.
    package convenience init(id: String, key: String, name: String? = nil, type: String? = nil, status: String? = nil,
                            version: Double? = nil, environment: String? = nil, environments: [String] = [],
                            locationIds: [String] = [], siteArea: RuleSet? = nil, audienceIds: [String] = [],
                            goalIds: [String] = [], audienceMatching: MatchingOption = .any,
                            locationMatching: MatchingOption = .any, variations: [Variation]) {
        let table = BucketTable(
            arms: variations.map { BucketArm(id: $0.id, trafficAllocation: $0.trafficAllocation, isActive: $0.isActive) },
            layout: BucketLayout(version: version))
        self.init(id: id, key: key, name: name, type: type, status: status, version: version, environment: environment,
                  environments: environments, locationIds: locationIds, siteArea: siteArea, audienceIds: audienceIds,
                  goalIds: goalIds, audienceMatching: audienceMatching, locationMatching: locationMatching,
                  variations: variations, bucketTable: table, isArchived: false, audienceIndexes: [], segmentIds: [],
                  locationIndexes: [])
    }

    private init(id: String, key: String, name: String?, type: String?, status: String?, version: Double?,
                 environment: String?, environments: [String], locationIds: [String], siteArea: RuleSet?,
                 audienceIds: [String], goalIds: [String], audienceMatching: MatchingOption,
                 locationMatching: MatchingOption, variations: [Variation], bucketTable: BucketTable, isArchived: Bool,
                 audienceIndexes: [Int], segmentIds: [String], locationIndexes: [Int]) {
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
        self.bucketTable = bucketTable
        self.isArchived = isArchived
        self.audienceIndexes = audienceIndexes
        self.segmentIds = segmentIds
        self.locationIndexes = locationIndexes
        var index: [String: Int] = [:]
        for (i, v) in variations.enumerated() where index[v.id] == nil { index[v.id] = i }
        variationIndexById = index
        rangeVariations = bucketTable.ranges.map { range in variations.firstIndex { $0.id == range.variationId } ?? -1 }
    }

    /// This experience with its audience, segment and location references resolved against a
    /// config, and its archived flag from that config.
    func resolving(audienceIndexes: [Int], segmentIds: [String], locationIndexes: [Int], isArchived: Bool) -> Experience {
        Experience(id: id, key: key, name: name, type: type, status: status, version: version, environment: environment,
                   environments: environments, locationIds: locationIds, siteArea: siteArea, audienceIds: audienceIds,
                   goalIds: goalIds, audienceMatching: audienceMatching, locationMatching: locationMatching,
                   variations: variations, bucketTable: bucketTable, isArchived: isArchived,
                   audienceIndexes: audienceIndexes, segmentIds: segmentIds, locationIndexes: locationIndexes)
    }

    /// The variation with this id, if the experience has it.
    public func variation(id: String) -> Variation? {
        variationIndexById[id].map { variations[$0] }
    }

    /// The variation with this key, if the experience has it.
    public func variation(key: String) -> Variation? {
        variations.first { $0.key == key }
    }

    /// The position in ``variations`` of the variation with this id (as ``variation(id:)`` finds it).
    package func variationIndex(id: String) -> Int? { variationIndexById[id] }

    /// The position in ``variations`` of the variation with this key (as ``variation(key:)`` finds it).
    package func variationIndex(key: String) -> Int? { variations.firstIndex { $0.key == key } }

    public static func == (lhs: Experience, rhs: Experience) -> Bool {
        lhs === rhs
            || (lhs.id == rhs.id && lhs.key == rhs.key && lhs.name == rhs.name && lhs.type == rhs.type
                && lhs.status == rhs.status && lhs.version?.bitPattern == rhs.version?.bitPattern && lhs.environment == rhs.environment
                && lhs.environments == rhs.environments && lhs.locationIds == rhs.locationIds
                && lhs.siteArea == rhs.siteArea && lhs.audienceIds == rhs.audienceIds && lhs.goalIds == rhs.goalIds
                && lhs.audienceMatching == rhs.audienceMatching && lhs.locationMatching == rhs.locationMatching
                && lhs.variations == rhs.variations && lhs.audienceIndexes == rhs.audienceIndexes
                && lhs.segmentIds == rhs.segmentIds && lhs.locationIndexes == rhs.locationIndexes
                && lhs.isArchived == rhs.isArchived)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(key)
        hasher.combine(variations)
    }

    static func decode<Value>(_ f: Fields<Value>, _ log: inout DegradationLog) -> Result<Experience, ElementRejection> {
        guard let id = f.identifier("id") else { return .failure(ElementRejection("experience has no id")) }
        guard let key = f.identifier("key") else { return .failure(ElementRejection("experience has no key")) }
        let matching = f.object("settings", &log)?.object("matching_options", &log)
        return .success(Experience(
            id: id, key: key,
            name: f.string("name", &log),
            type: f.string("type", &log),
            status: f.string("status", &log),
            version: f.javaScriptNumber("version", &log),
            environment: f.raw("environment").flatMap { $0.isTruthy ? $0.identifier : nil },
            environments: f.identifiers("environments", &log),
            locationIds: f.identifiers("locations", &log),
            siteArea: f.rules("site_area", &log),
            audienceIds: f.identifiers("audiences", &log),
            goalIds: f.identifiers("goals", &log),
            audienceMatching: MatchingOption(matching?.string("audiences", &log)),
            locationMatching: MatchingOption(matching?.string("locations", &log)),
            variations: f.elements("variations", &log) { Variation.decode($0, &$1) }))
    }
}
