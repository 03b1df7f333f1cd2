import ConvertBucketing
import ConvertEvents
import ConvertHashing
import ConvertModel
import ConvertRules
import ConvertStorage
import ConvertSupport
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
    /// The rules of `config.locations`, apart so the decision path does not copy locations.
    let locationRules: [RuleSet?]
    /// The rules and permanence of `config.audiences`, apart for the same reason.
    let audienceRules: [RuleSet?]
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
        locationRules = config.locations.map(\.rules)
        audienceRules = config.audiences.map(\.rules)
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

/// The state every context shares: config, readiness, ports, tracking switch.
final class SDKCore: @unchecked Sendable {
    // `installed`, `trackingEnabled` and `autoVisitorId` are guarded by `lock`; the rest is immutable.
    private let lock = NSLock()
    private var installed: InstalledConfig?
    private var trackingEnabled = true
    private var autoVisitorId: String?

    let configuration: ConvertConfiguration
    let ports: ConvertPorts
    let log: SDKLog
    let readiness = ReadinessGate()

    var events: SystemEventHub { ports.events }

    init(configuration: ConvertConfiguration, ports: ConvertPorts) {
        self.configuration = configuration
        self.ports = ports
        self.log = SDKLog(sink: ports.logSink, minimum: configuration.logLevel)
    }

    var current: InstalledConfig? { lock.withLock { installed } }

    var isTrackingEnabled: Bool {
        configuration.networkTracking && lock.withLock { trackingEnabled }
    }

    func setTrackingEnabled(_ enabled: Bool) {
        lock.withLock { trackingEnabled = enabled }
    }

    /// The auto visitor id: the stored one, or a new one persisted for next time.
    func autoGeneratedVisitorId() -> String {
        lock.withLock {
            if let autoVisitorId { return autoVisitorId }
            let id = ports.visitorIdStore.loadVisitorId() ?? {
                let fresh = ports.identifiers.next()
                ports.visitorIdStore.saveVisitorId(fresh)
                return fresh
            }()
            autoVisitorId = id
            return id
        }
    }

    /// Decodes and installs a document; announces `ready` for the first, `config.updated` for a
    /// changed one, nothing for an unchanged one.
    func install(_ document: ConfigDocument) {
        if current?.bytes == document.bytes {
            log.debug("config from \(document.origin.rawValue) unchanged")
            return
        }
        let decoded: DecodedConfig
        let json: JSONValue
        do throws(ConfigDecodingError) {
            json = try JSONParser.parse(document.bytes)
            decoded = try ConfigDecoder.decode(json: json)
        } catch {
            let message = "config from \(document.origin.rawValue) rejected: \(error.description)"
            if document.origin == .direct {
                log.error(message)
                readiness.fail(.invalidConfiguration(error.description))
            } else {
                log.error(message + "; keeping the current config")
            }
            return
        }
        for degradation in decoded.degradations { log.warn("config degraded: \(degradation)") }
        let environment = configuration.environment ?? decoded.environment ?? ConvertConfiguration.defaultEnvironment
        var fingerprint = json
        if case .object(var top) = json {
            top["_s_t"] = nil
            fingerprint = .object(top)
        }
        let next = InstalledConfig(config: decoded.config, environment: environment, fingerprint: fingerprint,
                                   bytes: document.bytes)
        let previous: InstalledConfig? = lock.withLock {
            let previous = installed
            if previous?.fingerprint != fingerprint { installed = next }
            return previous
        }
        if previous == nil {
            log.info("config installed from \(document.origin.rawValue): \(decoded.config.experiences.count) experiences")
            readiness.open()
            events.fire(.ready, .ready(ReadyPayload()))
        } else if previous?.fingerprint != fingerprint {
            log.info("config updated from \(document.origin.rawValue)")
            events.fire(.configUpdated, .configUpdated(ConfigUpdatedPayload(snapshot: decoded.config)))
        } else {
            log.debug("config from \(document.origin.rawValue) unchanged")
        }
    }

    /// Runs the config source for the life of the SDK.
    func runConfigSource() async {
        do {
            // A strong capture: the loader task holds the core anyway until the SDK cancels it,
            // and a weak reference would move the core's reference count to a side table,
            // making every context's retain of the core several times slower.
            // The visitor store loads beside the config fetch; the first config is installed
            // (and readiness opens) only once the store has finished loading.
            let store = ports.visitorStore
            let loading = Task { await store.prepare() }
            try await ports.configSource.run { document in
                await loading.value
                self.install(document)
            }
        } catch is CancellationError {
            return
        } catch let error as ConvertError {
            log.error("config source stopped: \(error.description)")
            readiness.fail(error)
            return
        } catch {
            log.error("config source stopped: \(error)")
            readiness.fail(.invalidConfiguration("\(error)"))
            return
        }
        if !readiness.isOpen && !Task.isCancelled {
            readiness.fail(.invalidConfiguration("the config source ended without delivering a config"))
        }
    }

}
