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
/// A value type whose content lives in one shared, immutable box: copying an experience costs
/// one retain, which matters on the decision path.
public struct Experience: Sendable, Hashable {
    private final class Storage: Sendable {
        let id: String
        let key: String
        let name: String?
        let type: String?
        let status: String?
        let version: Double?
        let environment: String?
        let environments: [String]
        let locationIds: [String]
        let siteArea: RuleSet?
        let audienceIds: [String]
        let goalIds: [String]
        let audienceMatching: MatchingOption
        let locationMatching: MatchingOption
        let variations: [Variation]
        let bucketTable: BucketTable
        let variationIndexById: [String: Int]
        let audienceIndexes: [Int]
        let segmentIds: [String]
        let locationIndexes: [Int]

        init(id: String, key: String, name: String?, type: String?, status: String?, version: Double?,
             environment: String?, environments: [String], locationIds: [String], siteArea: RuleSet?,
             audienceIds: [String], goalIds: [String], audienceMatching: MatchingOption,
             locationMatching: MatchingOption, variations: [Variation], bucketTable: BucketTable,
             variationIndexById: [String: Int], audienceIndexes: [Int], segmentIds: [String], locationIndexes: [Int]) {
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
            self.variationIndexById = variationIndexById
            self.audienceIndexes = audienceIndexes
            self.segmentIds = segmentIds
            self.locationIndexes = locationIndexes
        }
    }

    private let storage: Storage

    /// The experience's id: bucketing hashes it with the visitor id, and tracking reports it.
    public var id: String { storage.id }
    /// The key `variation(forExperience:)` takes.
    public var key: String { storage.key }
    /// The name shown in the Convert app; `nil` when absent.
    public var name: String? { storage.name }
    /// The experience's type (e.g. `"a/b_fullstack"`), uninterpreted; `nil` when absent.
    public var type: String? { storage.type }
    /// The status as written (e.g. `"active"`), not read by decisions: archived experiences are
    /// listed apart (``ProjectConfig/isArchived(experienceId:)``).
    public var status: String? { storage.status }
    /// `version` as JavaScript's `Number()` reads it (`nil` when absent, NaN when not numeric);
    /// above 11 the anchored bucket layout is used.
    public var version: Double? { storage.version }
    /// The environment the experience runs in, if it is limited to one; an empty or null
    /// `environment` limits nothing (the JavaScript SDK only checks a truthy one).
    public var environment: String? { storage.environment }
    /// `environments` as written; decisions read ``environment`` only.
    public var environments: [String] { storage.environments }
    /// Ids of the locations the experience runs in; one matching location is enough.
    public var locationIds: [String] { storage.locationIds }
    /// `site_area` rules, used when `locations` is empty.
    public var siteArea: RuleSet? { storage.siteArea }
    /// Ids of audiences and segments, as written.
    public var audienceIds: [String] { storage.audienceIds }
    /// Ids of the goals the experience reports on.
    public var goalIds: [String] { storage.goalIds }
    /// Whether one of the audiences (`any`, also when the config says nothing) or all of them must
    /// match.
    public var audienceMatching: MatchingOption { storage.audienceMatching }
    /// `matching_options.locations` as written. Decisions never read it: as in the JavaScript SDK,
    /// one matching location is enough whatever it says.
    public var locationMatching: MatchingOption { storage.locationMatching }
    /// The arms, in config order.
    public var variations: [Variation] { storage.variations }
    /// The precomputed bucket ranges of ``variations``.
    public var bucketTable: BucketTable { storage.bucketTable }
    /// Indexes into ``ProjectConfig/audiences`` of the ids in ``audienceIds`` that name audiences.
    package var audienceIndexes: [Int] { storage.audienceIndexes }
    /// The ids in ``audienceIds`` that name segments.
    public var segmentIds: [String] { storage.segmentIds }
    /// Indexes into ``ProjectConfig/locations`` of the ids in ``locationIds`` that name locations.
    package var locationIndexes: [Int] { storage.locationIndexes }

    /// An experience as the config describes it; the bucket table is computed here from the
    /// variations and `version`.
    public init(id: String, key: String, name: String? = nil, type: String? = nil, status: String? = nil,
                version: Double? = nil, environment: String? = nil, environments: [String] = [],
                locationIds: [String] = [], siteArea: RuleSet? = nil, audienceIds: [String] = [],
                goalIds: [String] = [], audienceMatching: MatchingOption = .any,
                locationMatching: MatchingOption = .any, variations: [Variation]) {
        var index: [String: Int] = [:]
        for (i, v) in variations.enumerated() where index[v.id] == nil { index[v.id] = i }
        let table = BucketTable(
            arms: variations.map { BucketArm(id: $0.id, trafficAllocation: $0.trafficAllocation, isActive: $0.isActive) },
            layout: BucketLayout(version: version))
        storage = Storage(id: id, key: key, name: name, type: type, status: status, version: version,
                          environment: environment, environments: environments, locationIds: locationIds,
                          siteArea: siteArea, audienceIds: audienceIds, goalIds: goalIds,
                          audienceMatching: audienceMatching, locationMatching: locationMatching,
                          variations: variations, bucketTable: table, variationIndexById: index,
                          audienceIndexes: [], segmentIds: [], locationIndexes: [])
    }

    private init(storage: Storage) { self.storage = storage }

    /// This experience with its audience, segment and location references resolved against a config.
    func resolving(audienceIndexes: [Int], segmentIds: [String], locationIndexes: [Int]) -> Experience {
        let s = storage
        return Experience(storage: Storage(
            id: s.id, key: s.key, name: s.name, type: s.type, status: s.status, version: s.version,
            environment: s.environment, environments: s.environments, locationIds: s.locationIds, siteArea: s.siteArea,
            audienceIds: s.audienceIds, goalIds: s.goalIds, audienceMatching: s.audienceMatching,
            locationMatching: s.locationMatching, variations: s.variations, bucketTable: s.bucketTable,
            variationIndexById: s.variationIndexById, audienceIndexes: audienceIndexes, segmentIds: segmentIds,
            locationIndexes: locationIndexes))
    }

    /// The variation with this id, if the experience has it.
    public func variation(id: String) -> Variation? {
        storage.variationIndexById[id].map { storage.variations[$0] }
    }

    /// The variation with this key, if the experience has it.
    public func variation(key: String) -> Variation? {
        storage.variations.first { $0.key == key }
    }

    /// The position in ``variations`` of the variation with this id (as ``variation(id:)`` finds it).
    package func variationIndex(id: String) -> Int? { storage.variationIndexById[id] }

    /// The position in ``variations`` of the variation with this key (as ``variation(key:)`` finds it).
    package func variationIndex(key: String) -> Int? { storage.variations.firstIndex { $0.key == key } }

    public static func == (lhs: Experience, rhs: Experience) -> Bool {
        lhs.storage === rhs.storage
            || (lhs.id == rhs.id && lhs.key == rhs.key && lhs.name == rhs.name && lhs.type == rhs.type
                && lhs.status == rhs.status && lhs.version?.bitPattern == rhs.version?.bitPattern && lhs.environment == rhs.environment
                && lhs.environments == rhs.environments && lhs.locationIds == rhs.locationIds
                && lhs.siteArea == rhs.siteArea && lhs.audienceIds == rhs.audienceIds && lhs.goalIds == rhs.goalIds
                && lhs.audienceMatching == rhs.audienceMatching && lhs.locationMatching == rhs.locationMatching
                && lhs.variations == rhs.variations && lhs.audienceIndexes == rhs.audienceIndexes
                && lhs.segmentIds == rhs.segmentIds && lhs.locationIndexes == rhs.locationIndexes)
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
