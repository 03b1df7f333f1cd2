import ConvertBucketing
import ConvertHashing
import ConvertModel
import ConvertRules
import ConvertVisitor
import ConvertSynchronization
import Foundation

/// The installed config together with what decisions need alongside it; a class so that
/// reading it on the decision path costs one retain.
package final class InstalledConfig: Sendable {
    package let config: ProjectConfig
    package let environment: String
    /// The parsed document without volatile keys, to tell a real change from a re-fetch; parsed
    /// from ``bytes`` when asked (only a re-fetch with other bytes asks).
    package var fingerprint: JSONValue {
        guard case .object(var top)? = try? JSONParser.parse(bytes) else { return .null }
        top["_s_t"] = nil
        return .object(top)
    }
    /// The bytes the config was decoded from, so a byte-identical re-fetch is not decoded again.
    package let bytes: Data
    /// The config's ``ConfigRevision``, worked out from ``bytes`` at the first snapshot.
    package var revision: String {
        revisionMemo.withValue { memo in
            if let known = memo { return known }
            let revision = ConfigRevision.of(bytes: bytes)
            memo = revision
            return revision
        }
    }
    private let revisionMemo = Locked<String?>(nil)
    /// The account and project every tracking event names, read out of the config once.
    package let accountId: String
    package let projectId: String
    /// `"{accountId}-{projectId}"`, the namespace of every visitor key, and its hash.
    package let namespace: String
    package let namespaceHash: UInt64
    /// `config.experiences`, held here so the decision path reads them without going through
    /// the config's accessors.
    package let experiences: [Experience]
    /// Each experience's ids as visitor records hold them, parallel to ``experiences``.
    package let storedIds: [StoredExperienceIds]
    package let experienceKeys: KeyIndex<SeededKeyHash>
    /// Interned keys (the id when a location has no key) of `config.locations`.
    package let locationKeys: [InternedId]
    /// The rules of `config.locations` (sets `0..<locations.count`), then those of
    /// `config.audiences` (from ``audienceRulesStart``), compiled for matching.
    package let rules: RuleProgram
    let audienceRulesStart: Int
    /// The permanence of `config.audiences`, apart so the decision path does not copy audiences.
    let audiencePermanent: [Bool]
    /// What resolving each feature reads, parallel to `config.features`.
    package let featurePlans: [FeaturePlan]
    // The same objects unretained, for ``withExperience(at:_:)`` and ``withFeaturePlan(at:_:)``:
    // the arrays above own them for the config's life. Usable from inlined code so that the
    // callers in other modules specialise the two accessors; nothing else reads them.
    @usableFromInline let experienceRefs: [Unmanaged<Experience>]
    @usableFromInline let storedIdRefs: [Unmanaged<StoredExperienceIds>]
    @usableFromInline let featurePlanRefs: [Unmanaged<FeaturePlan>]

    package init(config: ProjectConfig, environment: String, bytes: Data) {
        self.config = config
        self.environment = environment
        self.bytes = bytes
        accountId = config.accountId
        projectId = config.project.id
        namespace = "\(accountId)-\(projectId)"
        namespaceHash = KeyHash.hash64(namespace)
        experiences = config.experiences
        storedIds = experiences.map(StoredExperienceIds.init)
        experienceKeys = KeyIndex(experiences.map(\.key))
        locationKeys = IdPool.shared.intern(config.locations.map { $0.key ?? $0.id })
        rules = RuleProgram([config.locations.map(\.rules), config.audiences.map(\.rules)])
        audienceRulesStart = config.locations.count
        audiencePermanent = config.audiences.map { $0.type == .permanent }
        featurePlans = config.features.map { FeaturePlan($0, config) }
        experienceRefs = experiences.map(Unmanaged.passUnretained)
        storedIdRefs = storedIds.map(Unmanaged.passUnretained)
        featurePlanRefs = featurePlans.map(Unmanaged.passUnretained)
    }

    /// Calls `body` with the experience at `position` in `config.experiences` and its stored
    /// ids, borrowed: neither reference count is written. Sound because this config owns both
    /// for its whole life and the caller holds the config for the call; `body` may keep what it
    /// is given only by retaining it (a plain assignment does).
    @inlinable
    package func withExperience<Result>(at position: Int, _ body: (Experience, StoredExperienceIds) throws -> Result) rethrows
        -> Result {
        try experienceRefs[position]._withUnsafeGuaranteedRef { experience in
            try storedIdRefs[position]._withUnsafeGuaranteedRef { ids in try body(experience, ids) }
        }
    }

    /// The interned id of the experience at `position`, as visitor records hold it.
    @inline(__always)
    func storedExperienceId(at position: Int) -> InternedId {
        storedIdRefs[position]._withUnsafeGuaranteedRef(\.experience)
    }

    /// The index of the variation `stored` holds for the experience at `position`, if it holds
    /// one of the experience's.
    @inline(__always)
    func storedVariationIndex(at position: Int, in stored: borrowing VisitorData) -> Int? {
        storedIdRefs[position]._withUnsafeGuaranteedRef { ids in
            stored.variation(forExperience: ids.experience).flatMap { ids.variationIndex(of: $0) }
        }
    }

    /// Calls `body` with the plan of the feature at `position` in `config.features`, borrowed as
    /// ``withExperience(at:_:)`` borrows.
    @inlinable
    package func withFeaturePlan<Result>(at position: Int, _ body: (FeaturePlan) throws -> Result) rethrows -> Result {
        try featurePlanRefs[position]._withUnsafeGuaranteedRef(body)
    }

    /// The position of the experience with `key` in `config.experiences` (the first, if several
    /// share it).
    package func experiencePosition(key: String) -> Int? {
        experienceKeys.position(of: key)
    }

    /// The store key of a visitor whose id hashes (`KeyHash.hash64`) to `visitorHash`.
    package func visitorKey(_ visitorId: String, visitorHash: UInt64) -> VisitorKey {
        VisitorKey(namespace: namespace, namespaceHash: namespaceHash, visitorId: visitorId, visitorHash: visitorHash)
    }
}

/// An experience's id and its variations' ids, interned as visitor records hold them; a class,
/// read in place through one reference.
package final class StoredExperienceIds: Sendable {
    package let experience: InternedId
    /// Parallel to the experience's variations.
    package let variations: [InternedId]
    /// Parallel to the variations: the marker of a manual decision awaiting its exposure.
    package let pendingMarkers: [InternedId]
    /// Parallel to the variations: the marker of an exposure `trackExposure` sent.
    package let sentMarkers: [InternedId]
    /// Parallel to the variations: the marker of a decision made with no exposure.
    package let withheldMarkers: [InternedId]

    /// Interns the experience's ids and its variations' exposure markers, which decisions store.
    package init(_ experience: Experience) {
        let pool = IdPool.shared
        let variationIds = experience.variations.map(\.id)
        self.experience = pool.intern(experience.id)
        variations = pool.intern(variationIds)
        pendingMarkers = pool.intern(variationIds.map { ExposureMarker.pending(experienceId: experience.id, variationId: $0) })
        sentMarkers = pool.intern(variationIds.map { ExposureMarker.sent(experienceId: experience.id, variationId: $0) })
        withheldMarkers = pool.intern(variationIds.map { ExposureMarker.withheld(experienceId: experience.id, variationId: $0) })
    }

    /// The index in the experience's variations of the variation with this interned id.
    package func variationIndex(of variation: InternedId) -> Int? {
        variations.firstIndex(of: variation)
    }
}

/// ``KeyHash`` for ``KeyIndex``: seeded per process, so a config cannot be written to make the
/// experience-key index collide.
package enum SeededKeyHash: StringHash {
    @inline(__always)
    package static func hash(_ string: String) -> UInt64 { KeyHash.hash64(string) }
}

/// A feature's carrier experiences and, for each carrier's variations, the result the variation
/// gives the feature, its variables already cast to their declared types: a result is a
/// function of the config alone, so it is built once when the config is installed.
// A class: a call reads its fields through one reference instead of copying them.
package final class FeaturePlan: Sendable {
    /// The feature's key.
    package let key: String
    /// Positions in `config.experiences` of the experiences carrying the feature, in config order.
    package let carriers: [Int]
    /// Parallel to `carriers`: for each variation of the carrier, in the experience's own order
    /// (so a decision's variation index finds its entry), the result it gives with raw and with
    /// cast variables (`nil` when it has no change for the feature).
    package let variations: [[(raw: BucketedFeature?, cast: BucketedFeature?)]]
    /// The result when no carrier switches the feature on; its key, id and name are the
    /// feature's.
    package let disabled: BucketedFeature

    package init(_ feature: Feature, _ config: ProjectConfig) {
        key = feature.key
        carriers = config.carrierIndexes(featureId: feature.id)
        variations = carriers.map { position in
            let experience = config.experiences[position]
            return experience.variations.map { variation in
                guard let raw = variation.featureChange(featureId: feature.id)?.variables else { return (nil, nil) }
                func result(_ variables: [String: JSONValue]) -> BucketedFeature {
                    BucketedFeature(key: feature.key, id: feature.id, name: feature.name, status: .enabled,
                                    experienceId: experience.id, experienceKey: experience.key, variationId: variation.id,
                                    variationKey: variation.key, variables: variables)
                }
                return (result(raw), result(FeatureCasting.cast(raw, feature)))
            }
        }
        disabled = .disabled(key: feature.key, feature: feature)
    }

    /// The result the variation at `variationIndex` in carrier `carrier`'s variations gives,
    /// `nil` when it does not switch the feature on; `typeCasting` picks the cast or the raw
    /// variables. Every variation a decision gives (bucketed, stored, forced or previewed) is
    /// one of the carrier's own.
    package func result(carrier: Int, variationIndex: Int, typeCasting: Bool) -> BucketedFeature? {
        let entry = variations[carrier][variationIndex]
        return typeCasting ? entry.cast : entry.raw
    }
}
