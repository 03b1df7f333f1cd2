import ConvertBucketing
import ConvertEvents
import ConvertHashing
import ConvertModel
import ConvertRules
import ConvertStorage
import Foundation

/// What deciding one experience reads, gathered in one immutable object of this module so the
/// decision path reads plain fields instead of calling model accessors (each of which returns
/// a retained copy).
final class ExperiencePlan: Sendable {
    let experience: Experience
    let key: String
    /// The experience id as text (bucketing hashes it) and interned (visitor records hold it).
    let experienceId: String
    let id: InternedId
    let variationModels: [Variation]
    /// Parallel to `variationModels`.
    let variations: [InternedId]
    let bucketTable: BucketTable
    /// For each bucket range, the index of its variation in `variationModels` (-1: none).
    let rangeVariations: [Int]
    let archived: Bool
    let environment: String?
    let hasLocationIds: Bool
    let locationIndexes: [Int]
    let siteArea: RuleSet?
    let audienceIndexes: [Int]
    let allAudiences: Bool
    let segmentIds: [String]

    init(_ experience: Experience, id: InternedId, variations: [InternedId], archived: Bool) {
        self.experience = experience
        key = experience.key
        experienceId = experience.id
        self.id = id
        variationModels = experience.variations
        self.variations = variations
        bucketTable = experience.bucketTable
        self.archived = archived
        rangeVariations = experience.bucketTable.ranges.map { range in
            experience.variations.firstIndex { $0.id == range.variationId } ?? -1
        }
        environment = experience.environment
        hasLocationIds = !experience.locationIds.isEmpty
        locationIndexes = experience.locationIndexes
        siteArea = experience.siteArea
        audienceIndexes = experience.audienceIndexes
        allAudiences = experience.audienceMatching == .all
        segmentIds = experience.segmentIds
    }

    /// The index in `variations` of the variation with this interned id.
    func variationIndex(of variation: InternedId) -> Int? {
        variations.firstIndex(of: variation)
    }
}

/// ``KeyHash`` for ``KeyIndex``: seeded per process, so a config cannot be written to make the
/// experience-key index collide.
enum SeededKeyHash: StringHash {
    @inline(__always)
    static func hash(_ string: String) -> UInt64 { KeyHash.hash64(string) }
}
