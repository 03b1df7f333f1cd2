import ConvertBucketing
import ConvertEvents
import ConvertHashing
import ConvertModel
import ConvertRules
import ConvertStorage
import Foundation

/// The installed config together with what decisions need alongside it; a class so that
/// reading it on the decision path costs one retain.
final class InstalledConfig: Sendable {
    let config: ProjectConfig
    let environment: String
    /// The parsed document without volatile keys, to tell a real change from a re-fetch.
    let fingerprint: JSONValue
    /// The bytes the config was decoded from, so a byte-identical re-fetch is not decoded again.
    let bytes: Data
    /// `"{accountId}-{projectId}"`, the namespace of every visitor key, and its hash.
    let namespace: String
    let namespaceHash: UInt64
    /// What deciding each experience reads, parallel to `config.experiences`.
    let plans: [ExperiencePlan]
    let experienceKeys: ExperienceKeyIndex
    /// Interned keys (the id when a location has no key) of `config.locations`.
    let locationKeys: [InternedId]
    /// The rules of `config.locations` (sets `0..<locations.count`), then those of
    /// `config.audiences` (from ``audienceRulesStart``), compiled for matching.
    let rules: RuleProgram
    let audienceRulesStart: Int
    /// The permanence of `config.audiences`, apart so the decision path does not copy audiences.
    let audiencePermanent: [Bool]

    init(config: ProjectConfig, environment: String, fingerprint: JSONValue, bytes: Data) {
        self.config = config
        self.environment = environment
        self.fingerprint = fingerprint
        self.bytes = bytes
        namespace = "\(config.accountId)-\(config.project.id)"
        namespaceHash = KeyHash.hash64(namespace)
        var strings: [String] = []
        for experience in config.experiences {
            strings.append(experience.id)
            strings += experience.variations.map(\.id)
        }
        strings += config.locations.map { $0.key ?? $0.id }
        var interned = IdPool.shared.intern(strings)[...]
        plans = config.experiences.map { experience in
            let id = interned.removeFirst()
            let variations = Array(interned.prefix(experience.variations.count))
            interned = interned.dropFirst(experience.variations.count)
            return ExperiencePlan(experience, id: id, variations: variations,
                                  archived: config.isArchived(experienceId: experience.id))
        }
        experienceKeys = ExperienceKeyIndex(plans)
        locationKeys = Array(interned)
        rules = RuleProgram([config.locations.map(\.rules), config.audiences.map(\.rules)])
        audienceRulesStart = config.locations.count
        audiencePermanent = config.audiences.map { $0.type == .permanent }
    }

    /// The position of the experience with `key` in `config.experiences` (the first, if several
    /// share it).
    func experiencePosition(key: String) -> Int? {
        experienceKeys.position(of: key, in: plans)
    }

    /// The store key of a visitor whose id hashes (`KeyHash.hash64`) to `visitorHash`.
    func visitorKey(_ visitorId: String, visitorHash: UInt64) -> VisitorKey {
        VisitorKey(namespace: namespace, namespaceHash: namespaceHash, visitorId: visitorId, visitorHash: visitorHash)
    }
}
