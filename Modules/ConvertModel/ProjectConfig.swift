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
    /// The decoded and indexed content, shared by every copy so passing a config costs one retain.
    private final class Storage: Sendable {
        let accountId: String
        let project: Project
        let experiences: [Experience]
        let audiences: [Audience]
        let segments: [Segment]
        let locations: [Location]
        let goals: [Goal]
        let features: [Feature]
        let archivedExperienceIds: Set<String>
        let degradations: [ConfigDegradation]
        let experienceByKey: [String: Int]
        let experienceById: [String: Int]
        let audienceById: [String: Int]
        let segmentById: [String: Int]
        let segmentByKey: [String: Int]
        let locationById: [String: Int]
        let goalByKey: [String: Int]
        let goalById: [String: Int]
        let featureByKey: [String: Int]
        let featureById: [String: Int]
        /// Feature id → indexes of the experiences (config order) whose variations carry it.
        let carriersByFeatureId: [String: [Int]]

        init(accountId: String, project: Project, experiences: [Experience], audiences: [Audience], segments: [Segment],
             locations: [Location], goals: [Goal], features: [Feature], archivedExperienceIds: Set<String>,
             degradations: [ConfigDegradation]) {
            self.accountId = accountId
            self.project = project
            self.audiences = audiences
            self.segments = segments
            self.locations = locations
            self.goals = goals
            self.features = features
            self.archivedExperienceIds = archivedExperienceIds
            self.degradations = degradations
            let audienceById = ProjectConfig.index(audiences, by: \.id)
            let segmentById = ProjectConfig.index(segments, by: \.id)
            let locationById = ProjectConfig.index(locations, by: \.id)
            self.audienceById = audienceById
            self.segmentById = segmentById
            self.locationById = locationById
            segmentByKey = ProjectConfig.index(segments.filter { $0.key != nil }, by: { $0.key! })
            goalByKey = ProjectConfig.index(goals, by: \.key)
            goalById = ProjectConfig.index(goals, by: \.id)
            featureByKey = ProjectConfig.index(features, by: \.key)
            featureById = ProjectConfig.index(features, by: \.id)

            var carriers: [String: [Int]] = [:]
            let resolved = experiences.enumerated().map { i, e -> Experience in
                var carried = Set<String>()
                for change in e.variations.flatMap(\.changes) where change.isFeatureChange {
                    if let fid = change.featureId, carried.insert(fid).inserted {
                        carriers[fid, default: []].append(i)
                    }
                }
                return e.resolving(
                    audienceIndexes: e.audienceIds.compactMap { audienceById[$0] },
                    segmentIds: e.audienceIds.filter { audienceById[$0] == nil && segmentById[$0] != nil },
                    locationIndexes: e.locationIds.compactMap { locationById[$0] },
                    isArchived: archivedExperienceIds.contains(e.id))
            }
            self.experiences = resolved
            experienceByKey = ProjectConfig.index(resolved, by: \.key)
            experienceById = ProjectConfig.index(resolved, by: \.id)
            carriersByFeatureId = carriers
        }
    }

    private let storage: Storage

    /// `account_id`.
    public var accountId: String { storage.accountId }
    /// The project.
    public var project: Project { storage.project }
    /// Experiences in config order.
    public var experiences: [Experience] { storage.experiences }
    /// Audiences in config order.
    public var audiences: [Audience] { storage.audiences }
    /// Segments in config order.
    public var segments: [Segment] { storage.segments }
    /// Locations in config order.
    public var locations: [Location] { storage.locations }
    /// Goals in config order.
    public var goals: [Goal] { storage.goals }
    /// Features in config order.
    public var features: [Feature] { storage.features }
    /// Ids from `archived_experiences`.
    public var archivedExperienceIds: Set<String> { storage.archivedExperienceIds }
    /// What decoding gave up, in document order; empty for a clean document.
    public var degradations: [ConfigDegradation] { storage.degradations }

    /// Assembles and indexes a config from its parts.
    package init(accountId: String, project: Project, experiences: [Experience], audiences: [Audience] = [],
                segments: [Segment] = [], locations: [Location] = [], goals: [Goal] = [],
                features: [Feature] = [], archivedExperienceIds: Set<String> = [],
                degradations: [ConfigDegradation] = []) {
        storage = Storage(accountId: accountId, project: project, experiences: experiences, audiences: audiences,
                          segments: segments, locations: locations, goals: goals, features: features,
                          archivedExperienceIds: archivedExperienceIds, degradations: degradations)
    }

    fileprivate static func index<T>(_ items: [T], by key: (T) -> String) -> [String: Int] {
        var out: [String: Int] = [:]
        out.reserveCapacity(items.count)
        for (i, item) in items.enumerated() where out[key(item)] == nil {
            out[key(item)] = i
        }
        return out
    }

    /// The experience with this key (the first, if several share it).
    public func experience(key: String) -> Experience? { storage.experienceByKey[key].map { storage.experiences[$0] } }
    /// The position in ``experiences`` of the experience with this key.
    package func experienceIndex(key: String) -> Int? { storage.experienceByKey[key] }
    /// The position in ``experiences`` of the experience with this id.
    package func experienceIndex(id: String) -> Int? { storage.experienceById[id] }
    /// The experience with this id.
    public func experience(id: String) -> Experience? { storage.experienceById[id].map { storage.experiences[$0] } }
    /// The audience with this id.
    public func audience(id: String) -> Audience? { storage.audienceById[id].map { storage.audiences[$0] } }
    /// The segment with this id.
    public func segment(id: String) -> Segment? { storage.segmentById[id].map { storage.segments[$0] } }
    /// The segment with this key.
    public func segment(key: String) -> Segment? { storage.segmentByKey[key].map { storage.segments[$0] } }
    /// The location with this id.
    public func location(id: String) -> Location? { storage.locationById[id].map { storage.locations[$0] } }
    /// The goal with this key.
    public func goal(key: String) -> Goal? { storage.goalByKey[key].map { storage.goals[$0] } }
    /// The goal with this id.
    public func goal(id: String) -> Goal? { storage.goalById[id].map { storage.goals[$0] } }
    /// The feature with this key.
    public func feature(key: String) -> Feature? { storage.featureByKey[key].map { storage.features[$0] } }
    /// The position in ``features`` of the feature ``feature(key:)`` gives.
    package func featureIndex(key: String) -> Int? { storage.featureByKey[key] }
    /// The feature with this id.
    public func feature(id: String) -> Feature? { storage.featureById[id].map { storage.features[$0] } }

    /// Whether the experience with this id is archived.
    public func isArchived(experienceId: String) -> Bool { storage.archivedExperienceIds.contains(experienceId) }

    /// The experiences, in config order, whose variations carry the feature with this id.
    public func experiencesCarrying(featureId: String) -> [Experience] {
        (storage.carriersByFeatureId[featureId] ?? []).map { storage.experiences[$0] }
    }

    /// Indexes into ``experiences`` (config order) of the experiences carrying the feature with this id.
    package func carrierIndexes(featureId: String) -> [Int] {
        storage.carriersByFeatureId[featureId] ?? []
    }

    /// Whether two values share one decoded document.
    package func isSameDocument(as other: ProjectConfig) -> Bool { storage === other.storage }
}
