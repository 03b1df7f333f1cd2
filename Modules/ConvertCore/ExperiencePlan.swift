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

/// Experience positions by key: an open-addressing table over `KeyHash`, cheaper than hashing
/// the key for a `Dictionary` on every decision.
struct ExperienceKeyIndex: Sendable {
    private let buckets: [Int32]  // position + 1; 0 = empty
    private let hashes: [UInt64]
    private let mask: Int

    init(_ plans: [ExperiencePlan]) {
        var size = 8
        while size < plans.count * 2 { size <<= 1 }
        var buckets = [Int32](repeating: 0, count: size)
        var hashes = [UInt64](repeating: 0, count: size)
        var seen = Set<String>()
        for (position, plan) in plans.enumerated() where seen.insert(plan.key).inserted {
            let hash = KeyHash.hash64(plan.key)
            var bucket = Int(truncatingIfNeeded: hash) & (size - 1)
            while buckets[bucket] != 0 { bucket = (bucket + 1) & (size - 1) }
            buckets[bucket] = Int32(position + 1)
            hashes[bucket] = hash
        }
        self.buckets = buckets
        self.hashes = hashes
        mask = size - 1
    }

    /// The position of the first experience with `key`.
    func position(of key: String, in plans: [ExperiencePlan]) -> Int? {
        let hash = KeyHash.hash64(key)
        var bucket = Int(truncatingIfNeeded: hash) & mask
        while buckets[bucket] != 0 {
            let position = Int(buckets[bucket]) - 1
            if hashes[bucket] == hash, plans[position].key == key { return position }
            bucket = (bucket + 1) & mask
        }
        return nil
    }
}
