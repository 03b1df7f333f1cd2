import ConvertBucketing
import ConvertEnvironment
import ConvertEvents
import ConvertHashing
import ConvertModel
import ConvertRules
import ConvertStorage
import ConvertSynchronization
import Foundation

/// The state every context shares: config, readiness, ports, tracking switch.
final class SDKRuntime: Sendable {
    /// What the runtime owns and changes; each change is then published to `decisionState`.
    private struct Owned {
        var installed: InstalledConfig?
        var trackingEnabled = true
        var autoVisitorId: String?
        /// The auto visitor id used while the store could not be read.
        var provisionalVisitorId: String?
        var overrides = DecisionOverrides()
        var hooks = HookList()
    }
    private let owned = Locked(Owned())
    /// Hook failures, reported at most once per 10 s (on the sleep clock).
    let hookFailures = Locked(RateLimitedCount())

    let configuration: ConvertConfiguration
    let ports: ConvertPorts
    /// The visitor store, when it is shared with other instances.
    let sharedStore: (any SharedVisitorDataStore)?
    /// `sharedStore != nil`, read on the decision path without copying the existential.
    let sharesVisitorData: Bool
    let log: SDKLog
    let readiness = ReadinessGate()
    /// How fresh the config is, and who listens for the status.
    let freshness = Locked(ConfigFreshness())
    /// The change streams, told of every config installed.
    let watchers = ConfigWatchers()

    var events: SystemEventHub { ports.events }

    init(configuration: ConvertConfiguration, ports: ConvertPorts) {
        self.configuration = configuration
        self.ports = ports
        sharedStore = ports.visitorStore as? any SharedVisitorDataStore
        sharesVisitorData = sharedStore != nil
        self.log = SDKLog(sink: ports.logSink, minimum: configuration.logLevel)
        // A shared store made before the SDK logs through the SDK's log from now on.
        (ports.visitorStore as? any SDKLogAdopting)?.adoptLog(log)
        let published = self.published, generation = self.generation
        ports.events.observeListening { mask in
            published.update { $0 = $0.changing { $0.listening = mask } }
            generation.advance()
        }
    }

    /// What every call reads of the SDK: the installed config, the tracking switch, forced
    /// decisions, hooks and the events listened to. Immutable, so a context keeps the one it
    /// read and hands it to each call as one reference; a change publishes a new one.
    final class Published: Sendable {
        struct Fields {
            var installed: InstalledConfig?
            var trackingEnabled = true
            /// `nil` when nothing is forced, so a decision checks one optional.
            var overrides: DecisionOverrides?
            var hooks = HookList()
            /// The system events that have listeners, as ``SystemEventHub`` masks them.
            var listening: UInt32 = 0
        }
        private let fields: Fields

        init(_ fields: Fields) {
            self.fields = fields
        }

        var installed: InstalledConfig? { fields.installed }
        var trackingEnabled: Bool { fields.trackingEnabled }
        var overrides: DecisionOverrides? { fields.overrides }
        var hooks: HookList { fields.hooks }
        var listening: UInt32 { fields.listening }

        /// A new state: these fields with `change` made.
        func changing(_ change: (inout Fields) -> Void) -> Published {
            var next = fields
            change(&next)
            return Published(next)
        }
    }
    /// The published state, once per stripe so that threads calling for different visitors
    /// share no lock (written under `owned`'s lock, after the owned copy).
    let published = StripedValue(Published(Published.Fields()))
    /// Advanced after every change of `published`: a context keeps the state it read while this
    /// generation stays, so a call takes no lock for it.
    let generation = GenerationCounter()

    /// Changes every stripe of the published state, then tells the contexts' copies they are old.
    private func publish(_ change: (inout Published.Fields) -> Void) {
        published.update { $0 = $0.changing(change) }
        generation.advance()
    }

    /// The published state as the stripe of `visitorHash` holds it, with the generation it is at
    /// least as new as.
    func read(_ visitorHash: UInt64) -> (generation: UInt64, state: Published) {
        let generation = generation.value
        return (generation, published.read(visitorHash) { $0 })
    }

    var current: InstalledConfig? { owned.withValue { $0.installed } }

    func addHook(_ hook: any EvaluationHook) {
        owned.withValue { owned in
            owned.hooks.append(hook)
            let all = owned.hooks
            publish { $0.hooks = all }
        }
    }

    var currentOverrides: DecisionOverrides { owned.withValue { $0.overrides } }

    func setOverrides(_ next: DecisionOverrides) {
        owned.withValue { owned in
            owned.overrides = next
            publish { $0.overrides = next.isEmpty ? nil : next }
        }
    }

    var isTrackingEnabled: Bool {
        configuration.networkTracking && owned.withValue { $0.trackingEnabled }
    }

    func setTrackingEnabled(_ enabled: Bool) {
        owned.withValue { owned in
            owned.trackingEnabled = enabled
            publish { $0.trackingEnabled = enabled }
        }
    }

    /// The auto visitor id: the stored one, or a new one persisted for next time.
    func autoGeneratedVisitorId() -> String {
        owned.withValue { owned in
            if let autoVisitorId = owned.autoVisitorId { return autoVisitorId }
            let id: String
            switch ports.visitorIdStore.readVisitorId() {
            case .stored(let stored):
                id = stored
            case .absent:
                id = owned.provisionalVisitorId ?? ports.identifiers.next()
                ports.visitorIdStore.saveVisitorId(id)
            case .unreadable:
                // An id may be kept but cannot be read yet (a Keychain before the first unlock):
                // one for now, kept in memory only, and the store is read again next time, so
                // the kept id is never replaced; written later if none turns out to be kept.
                let provisional = owned.provisionalVisitorId ?? ports.identifiers.next()
                owned.provisionalVisitorId = provisional
                return provisional
            }
            owned.autoVisitorId = id
            owned.provisionalVisitorId = nil
            return id
        }
    }

    /// Decodes and installs a document; announces `ready` for the first, `config.updated` for a
    /// changed one, nothing for an unchanged one.
    func install(_ document: ConfigDocument) {
        if current?.bytes == document.bytes {
            log.debug("config from \(document.origin.rawValue) unchanged")
            configConfirmed(document)
            return
        }
        let decoded: DecodedConfig
        do throws(ConfigDecodingError) {
            decoded = try ConfigDecoder.decode(document.bytes)
        } catch {
            let located = error.description(locatingIn: [UInt8](document.bytes))
            let message = "config from \(document.origin.rawValue) rejected: \(located)"
            if document.origin == .direct {
                log.error(message, metadata: ["convert.origin": document.origin.rawValue])
                readiness.fail(.invalidConfiguration(located))
                announceStatus()
            } else {
                log.error(message + (current == nil ? "; no config installed yet" : "; keeping the current config"),
                          metadata: ["convert.origin": document.origin.rawValue])
                configFailed("config rejected: \(located)")
            }
            return
        }
        for degradation in decoded.degradations { log.warn("config degraded: \(degradation)") }
        let environment = configuration.environment ?? decoded.environment ?? ConvertConfiguration.defaultEnvironment
        let next = InstalledConfig(config: decoded.config, environment: environment, bytes: document.bytes)
        // Fingerprints are parsed only when a document with other bytes follows one installed,
        // and outside the lock; again inside it only if another install came in between.
        let seen = owned.withValue { $0.installed }
        var nextFingerprint: JSONValue?  // parsed at the first comparison, once
        func differs(from installed: InstalledConfig?) -> Bool {
            guard let installed else { return true }
            let fingerprint = nextFingerprint ?? next.fingerprint
            nextFingerprint = fingerprint
            return installed.fingerprint != fingerprint
        }
        let changedSinceSeen = differs(from: seen)
        let (previous, changed): (InstalledConfig?, Bool) = owned.withValue { owned in
            let previous = owned.installed
            let changed = previous === seen ? changedSinceSeen : differs(from: previous)
            if changed {
                owned.installed = next
                publish { $0.installed = next }
            }
            return (previous, changed)
        }
        configConfirmed(document)
        if previous == nil {
            log.info("config installed from \(document.origin.rawValue): \(decoded.config.experiences.count) experiences",
                     metadata: ["convert.origin": document.origin.rawValue])
            readiness.open()
            events.publish(.ready, .ready(ReadyPayload()))
            watchers.configInstalled(InstalledChange(previous: nil, next: decoded.config, changes: nil))
        } else if let previous, changed {
            let changes = ConfigChanges(from: previous.config, to: decoded.config)
            log.info("config updated from \(document.origin.rawValue): \(changes)",
                     metadata: ["convert.origin": document.origin.rawValue])
            events.publish(.configUpdated, .configUpdated(ConfigUpdatedPayload(snapshot: decoded.config, changes: changes)))
            watchers.configInstalled(InstalledChange(previous: previous.config, next: decoded.config, changes: changes))
        } else {
            log.debug("config from \(document.origin.rawValue) unchanged")
        }
    }

    /// Runs the config source for the life of the SDK.
    func runConfigSource() async {
        do {
            // A strong capture: the loader task holds the runtime anyway until the SDK cancels it,
            // and a weak reference would move the runtime's reference count to a side table,
            // making every context's retain of the runtime several times slower.
            // The visitor store loads beside the config fetch; the first config is installed
            // (and readiness opens) only once the store has finished loading.
            let store = ports.visitorStore
            let loading = Task { await store.prepare() }
            try await ports.configSource.run(deliver: { document in
                await loading.value
                self.install(document)
            }, report: { report in
                switch report {
                case .confirmed: self.configConfirmed()
                case .failed(let reason): self.configFailed(reason)
                }
            })
        } catch is CancellationError {
            return
        } catch let error as ConvertError {
            log.error("config source stopped: \(error.description)")
            readiness.fail(error)
            announceStatus()
            return
        } catch {
            log.error("config source stopped: \(error)")
            readiness.fail(.invalidConfiguration("\(error)"))
            announceStatus()
            return
        }
        // A gate that already opened (or failed) stays as it is.
        if !Task.isCancelled {
            readiness.fail(.invalidConfiguration("the config source ended without delivering a config"))
            announceStatus()
        }
    }

}
