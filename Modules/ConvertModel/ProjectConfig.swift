import ConvertRules

/// A decoded project configuration, indexed for decisions.
///
/// Lookups by key or id are dictionary hits built once per config; experiences carry their
/// bucket tables and resolved audience, segment and location references.
///
/// ```swift
/// let config = try ConfigDecoder.decode(data).config
/// let experience = config.experience(key: "test-experience-ab-fullstack-1")
/// ```
public struct ProjectConfig: Sendable {
    public let accountId: String
    public let project: Project
    public let experiences: [Experience]
    public let audiences: [Audience]
    public let segments: [Segment]
    public let locations: [Location]
    public let goals: [Goal]
    public let features: [Feature]
    /// Ids from `archived_experiences`.
    public let archivedExperienceIds: Set<String>
    /// What decoding gave up, in document order; empty for a clean document.
    public let degradations: [ConfigDegradation]

    private let experienceByKey: [String: Int]
    private let experienceById: [String: Int]
    private let audienceById: [String: Int]
    private let segmentById: [String: Int]
    private let segmentByKey: [String: Int]
    private let locationById: [String: Int]
    private let goalByKey: [String: Int]
    private let goalById: [String: Int]
    private let featureByKey: [String: Int]
    private let featureById: [String: Int]
    /// Feature id → indexes of the experiences (config order) whose variations carry it.
    private let carriersByFeatureId: [String: [Int]]

    /// Assembles and indexes a config from its parts.
    public init(accountId: String, project: Project, experiences: [Experience], audiences: [Audience] = [],
                segments: [Segment] = [], locations: [Location] = [], goals: [Goal] = [],
                features: [Feature] = [], archivedExperienceIds: Set<String> = [],
                degradations: [ConfigDegradation] = []) {
        self.accountId = accountId
        self.project = project
        self.audiences = audiences
        self.segments = segments
        self.locations = locations
        self.goals = goals
        self.features = features
        self.archivedExperienceIds = archivedExperienceIds
        self.degradations = degradations
        let audienceById = Self.index(audiences, by: \.id)
        let segmentById = Self.index(segments, by: \.id)
        let locationById = Self.index(locations, by: \.id)
        self.audienceById = audienceById
        self.segmentById = segmentById
        self.locationById = locationById
        segmentByKey = Self.index(segments.filter { $0.key != nil }, by: { $0.key! })
        goalByKey = Self.index(goals, by: \.key)
        goalById = Self.index(goals, by: \.id)
        featureByKey = Self.index(features, by: \.key)
        featureById = Self.index(features, by: \.id)

        var resolved = experiences
        var carriers: [String: [Int]] = [:]
        for i in resolved.indices {
            var e = resolved[i]
            e.audienceIndexes = e.audienceIds.compactMap { audienceById[$0] }
            e.segmentIds = e.audienceIds.filter { audienceById[$0] == nil && segmentById[$0] != nil }
            e.locationIndexes = e.locationIds.compactMap { locationById[$0] }
            resolved[i] = e
            var carried = Set<String>()
            for change in e.variations.flatMap(\.changes) where change.isFeatureChange {
                if let fid = change.featureId, carried.insert(fid).inserted {
                    carriers[fid, default: []].append(i)
                }
            }
        }
        self.experiences = resolved
        experienceByKey = Self.index(resolved, by: \.key)
        experienceById = Self.index(resolved, by: \.id)
        carriersByFeatureId = carriers
    }

    private static func index<T>(_ items: [T], by key: (T) -> String) -> [String: Int] {
        var out: [String: Int] = [:]
        out.reserveCapacity(items.count)
        for (i, item) in items.enumerated() where out[key(item)] == nil {
            out[key(item)] = i
        }
        return out
    }

    public func experience(key: String) -> Experience? { experienceByKey[key].map { experiences[$0] } }
    public func experience(id: String) -> Experience? { experienceById[id].map { experiences[$0] } }
    public func audience(id: String) -> Audience? { audienceById[id].map { audiences[$0] } }
    public func segment(id: String) -> Segment? { segmentById[id].map { segments[$0] } }
    public func segment(key: String) -> Segment? { segmentByKey[key].map { segments[$0] } }
    public func location(id: String) -> Location? { locationById[id].map { locations[$0] } }
    public func goal(key: String) -> Goal? { goalByKey[key].map { goals[$0] } }
    public func goal(id: String) -> Goal? { goalById[id].map { goals[$0] } }
    public func feature(key: String) -> Feature? { featureByKey[key].map { features[$0] } }
    public func feature(id: String) -> Feature? { featureById[id].map { features[$0] } }

    /// Whether the experience with this id is archived.
    public func isArchived(experienceId: String) -> Bool { archivedExperienceIds.contains(experienceId) }

    /// The experiences, in config order, whose variations carry the feature with this id.
    public func experiencesCarrying(featureId: String) -> [Experience] {
        (carriersByFeatureId[featureId] ?? []).map { experiences[$0] }
    }
}
