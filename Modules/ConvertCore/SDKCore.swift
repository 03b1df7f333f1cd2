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
    /// Interned ids of each experience, parallel to `config.experiences`.
    let experienceIds: [ExperienceIds]
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
        experienceIds = config.experiences.map { experience in
            let id = interned.removeFirst()
            let variations = Array(interned.prefix(experience.variations.count))
            interned = interned.dropFirst(experience.variations.count)
            return ExperienceIds(experience, id: id, variations: variations,
                                 archived: config.isArchived(experienceId: experience.id))
        }
        locationKeys = Array(interned)
        locationRules = config.locations.map(\.rules)
        audienceRules = config.audiences.map(\.rules)
        audiencePermanent = config.audiences.map { $0.type == .permanent }
    }

    /// The store key of a visitor whose id hashes (`KeyHash.hash64`) to `visitorHash`.
    func visitorKey(_ visitorId: String, visitorHash: UInt64) -> VisitorKey {
        VisitorKey(namespace: namespace, namespaceHash: namespaceHash, visitorId: visitorId, visitorHash: visitorHash)
    }
}

/// An experience's ids as visitor records hold them (a class: one retain per decision).
final class ExperienceIds: Sendable {
    let id: InternedId
    /// Parallel to `experience.variations`.
    let variations: [InternedId]
    /// For each bucket range, the index of its variation in `experience.variations` (-1: none).
    let rangeVariations: [Int]
    let archived: Bool

    init(_ experience: Experience, id: InternedId, variations: [InternedId], archived: Bool) {
        self.id = id
        self.variations = variations
        self.archived = archived
        let all = experience.variations
        rangeVariations = experience.bucketTable.ranges.map { range in
            all.firstIndex { $0.id == range.variationId } ?? -1
        }
    }

    /// The index in `experience.variations` of the variation with this interned id.
    func variationIndex(of variation: InternedId) -> Int? {
        variations.firstIndex(of: variation)
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
            try await ports.configSource.run { document in
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
