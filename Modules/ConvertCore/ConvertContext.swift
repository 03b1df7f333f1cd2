import ConvertEnvironment
import ConvertEvents
import ConvertHashing
import ConvertModel
import ConvertRules
import ConvertStorage
import ConvertSynchronization
import ConvertVisitor
import Foundation

/// One visitor's view of the SDK: decisions, features, conversions and segments for that visitor.
///
/// Contexts are cheap: create one per request or per screen. All of them share the SDK's
/// config and visitor store, so decisions stay sticky across contexts for the same visitor.
public final class ConvertContext: Sendable {
    let runtime: SDKRuntime
    /// The visitor this context decides for.
    public let visitorId: String
    /// What the context's calls change, behind a lock of its own.
    private let state: InlineLocked<State>

    private struct State {
        var attributes: [String: JSONValue]
        var locationProperties: [String: JSONValue] = [:]
        var preview: PreviewTarget?
        var creationSegmentsStored = false
        /// How ``loadVisitorData()`` went; `nil` before it is called.
        var loadResult: VisitorLoadResult?
        /// The visitor's data as storing the creation segments left it, for the first decision
        /// to start from instead of reading the store again (with the namespace hash it belongs to).
        var prefetched: (namespaceHash: UInt64, data: VisitorData)?
        var hooks = HookList()
        /// The SDK's published state as this context last read it, and the generation it is at
        /// least as new as: calls reuse it while ``SDKRuntime/generation`` stays there.
        var published: SDKRuntime.Published?
        var generation: UInt64 = 0
        /// Non-report keys given to ``updateVisitorProperties(_:)``, under the attributes.
        var visitorProperties: [String: JSONValue] = [:]
        var consent = VisitorConsent.granted
    }
    /// The report keys among the creation attributes with their values as given, stored as the
    /// visitor's segments once a config is installed (`nil` when there are none, or when the
    /// context previews). Audiences read these keys from the store, as the JavaScript SDK does.
    let creationSegments: ReportValues?
    /// Whether they still wait for a config (the context was created before readiness).
    private let creationSegmentsDeferred: Bool

    /// `KeyHash.hash64(visitorId)`, computed once for every store lookup this context makes.
    let visitorHash: UInt64

    /// Why the visitor id cannot be used (empty, blank, or longer than ``maximumVisitorIdBytes``);
    /// such a context degrades every call (no variation, disabled features, nothing tracked).
    public let visitorIdProblem: String?

    /// The longest visitor id accepted, in UTF-8 bytes.
    public static let maximumVisitorIdBytes = VisitorIdBound.maximumBytes

    /// - Parameters:
    ///   - deferringSegments: store the creation segments at the first call rather than now (a
    ///     context whose visitor is loaded from a shared store first, so they go over what was
    ///     loaded).
    ///   - consent: the visitor's; the configuration's ``ConvertConfiguration/defaultConsent``
    ///     when `nil`.
    init(runtime: SDKRuntime, visitorId: String, attributes: [String: JSONValue], deferringSegments: Bool = false,
         consent: VisitorConsent? = nil) {
        let consent = consent ?? runtime.configuration.defaultConsent
        self.visitorId = visitorId
        visitorHash = KeyHash.hash64(visitorId)
        if Self.isBlank(visitorId) {
            visitorIdProblem = "the visitor id is empty"
        } else if visitorId.utf8.count > Self.maximumVisitorIdBytes {
            visitorIdProblem = "the visitor id is longer than \(Self.maximumVisitorIdBytes) bytes"
        } else {
            visitorIdProblem = nil
        }
        if let visitorIdProblem { runtime.log.warn("context not usable: \(visitorIdProblem)") }
        var preview: PreviewTarget?
        if case .string(let raw)? = attributes.member(PreviewTarget.attributeKey) { preview = PreviewTarget(parsing: raw) }
        creationSegments = preview != nil || visitorIdProblem != nil ? nil : ReportValues(of: attributes)
        // Without consent they wait, unstored, for it.
        if let creationSegments, !deferringSegments, consent == .granted {
            let (generation, published) = runtime.read(visitorHash)
            let prefetched = Self.prefetch(creationSegments, runtime, published, visitorId, visitorHash)
            creationSegmentsDeferred = prefetched == nil
            state = InlineLocked.holding(State(attributes: attributes, preview: preview, creationSegmentsStored: prefetched != nil,
                                       prefetched: prefetched, published: published, generation: generation, consent: consent))
        } else {
            creationSegmentsDeferred = creationSegments != nil
            state = InlineLocked.holding(State(attributes: attributes, preview: preview, consent: consent))
        }
        self.runtime = runtime
    }

    /// Stores `segments` as the visitor's in the config `decision` holds, if any; the namespace
    /// stored under and the visitor's data after.
    private static func prefetch(_ segments: ReportValues, _ runtime: SDKRuntime, _ published: SDKRuntime.Published,
                                 _ visitorId: String, _ visitorHash: UInt64) -> (namespaceHash: UInt64, data: VisitorData)? {
        guard let installed = published.installed else { return nil }
        return (installed.namespaceHash, store(segments, runtime, installed.visitorKey(visitorId, visitorHash: visitorHash)))
    }

    /// Stores `segments` as the visitor's; returns the visitor's data after.
    private func store(_ segments: ReportValues, _ installed: InstalledConfig) -> VisitorData {
        Self.store(segments, runtime, installed.visitorKey(visitorId, visitorHash: visitorHash))
    }

    private static func store(_ segments: ReportValues, _ runtime: SDKRuntime, _ key: VisitorKey) -> VisitorData {
        var refused: [String] = []
        let data = runtime.ports.visitorStore.update(key) { data -> VisitorData in
            refused = []
            _ = data.storeSegmentValues(segments, refused: &refused)
            return data
        }
        runtime.logRefusedSegments(refused)
        return data
    }

    /// Whether `id` is empty or only whitespace; an ASCII non-space byte settles it at once.
    private static func isBlank(_ id: String) -> Bool {
        for byte in id.utf8 {
            if byte < 0x80 {
                if byte != 0x20 && !(0x09...0x0D).contains(byte) { return false }
            } else {
                return id.allSatisfy(\.isWhitespace)
            }
        }
        return true
    }

    /// The visitor id as logs show it: at most 64 characters.
    var loggedVisitorId: String {
        visitorId.count <= 64 ? visitorId : String(visitorId.prefix(64)) + "…"
    }

    /// The visitor's attributes (audience data).
    public var visitorAttributes: [String: JSONValue] { state.withValue { $0.attributes } }

    /// Replaces or adds attributes; `nil` values remove keys.
    public func setAttributes(_ values: [String: JSONValue?]) {
        state.withValue { state in
            for (key, value) in values { state.attributes[key] = value }
        }
    }

    /// The properties locations and `site_area` rules are matched against.
    public var visitorLocationProperties: [String: JSONValue] { state.withValue { $0.locationProperties } }

    /// Sets the location properties (replacing the previous ones).
    public func setLocationProperties(_ properties: [String: JSONValue]) {
        state.withValue { $0.locationProperties = properties }
    }

    /// Forces `convert_preview` (`"{experienceId}.{variationId}"`, both ASCII digits). While a
    /// preview is set, nothing this context does is tracked, stored or announced.
    /// - Returns: whether the value parsed.
    @discardableResult
    public func setPreview(_ value: String) -> Bool {
        guard let target = PreviewTarget(parsing: value) else {
            runtime.log.warn("convert_preview value \"\(value)\" is not {experienceId}.{variationId}")
            return false
        }
        state.withValue { $0.preview = target }
        return true
    }

    /// Ends a preview.
    public func clearPreview() {
        state.withValue { $0.preview = nil }
    }

    /// How loading the visitor's shared data went (`nil` until ``loadVisitorData()``); after
    /// `.failed`, decisions treat the visitor as this instance knows it, new if unknown.
    public var visitorDataLoad: VisitorLoadResult? { state.withValue { $0.loadResult } }

    func setVisitorDataLoad(_ result: VisitorLoadResult) {
        state.withValue { $0.loadResult = result }
    }

    /// Forgets the data prefetched at creation (a load changed the store under it) and stores
    /// the creation segments over what was loaded — again, or for the first time when they
    /// waited for the load — as a returning visitor's new values go over its stored ones.
    func visitorDataLoaded(_ installed: InstalledConfig) {
        let consented = state.withValue { state -> Bool in
            state.prefetched = nil
            guard state.consent == .granted else { return false }
            state.creationSegmentsStored = true
            return true
        }
        if consented, let creationSegments { _ = store(creationSegments, installed) }
    }

    /// Whether the visitor agreed to be stored and tracked: without consent the context decides
    /// (the same answers) but stores nothing and sends nothing — no bucketing, conversions or
    /// segments. Set at creation (``ConvertConfiguration/defaultConsent`` unless given).
    public var consent: VisitorConsent { state.withValue { $0.consent } }

    /// Records the visitor's consent; it applies to the calls made from now on. Decisions made
    /// before consent was granted are not sent afterwards: a decision stored from then on is.
    public func setConsent(_ consent: VisitorConsent) {
        state.withValue { $0.consent = consent }
    }

    /// Whether a preview is set.
    public var isPreviewing: Bool { state.withValue { $0.preview != nil } }

    /// Deep-merges `values` into the properties kept under the attributes.
    func mergeVisitorProperties(_ values: [String: JSONValue]) {
        state.withValue { $0.visitorProperties = JSONValue.deepMerging($0.visitorProperties, values) }
    }

    /// Adds a hook run around this context's evaluations, after the SDK's hooks.
    public func addHook(_ hook: any EvaluationHook) {
        state.withValue { $0.hooks.append(hook) }
    }

    /// The hooks of a call that could not start (not ready, unusable visitor id).
    func hooksForFailedCall() -> HookList {
        let (cached, own) = state.withValue { ($0.published?.hooks, $0.hooks) }
        // A call refused before the SDK was ready has just cached the published state; one
        // refused for its visitor id never read it.
        let sdk = cached ?? runtime.read(visitorHash).state.hooks
        return sdk + own
    }

    /// Whether the visitor id can be used; when it cannot, `call` is logged as degraded.
    func checkVisitorId(_ call: String) -> Bool {
        guard let visitorIdProblem else { return true }
        runtime.log.warn("\(call): \(visitorIdProblem); degraded result",
                         metadata: ["convert.call": call, "convert.reason": "invalidVisitorId"])
        return false
    }

    /// The one entry of every call that reads or writes the visitor's data: checks the visitor
    /// id, reads the SDK's published state (from the context's own copy while nothing changed,
    /// so the context's lock is the only one taken), and returns the call's decider on its
    /// snapshot of the installed config and the context's state (so the data prefetched at
    /// creation serves the first call only). `nil`, logged, when the visitor id is unusable or
    /// the SDK is not ready.
    ///
    /// Creation attributes' report keys that waited for the first config are stored here, once,
    /// as `setDefaultSegments` would without announcing them: the JavaScript SDK stores them
    /// when a context is created, so a returning visitor keeps them. `recording: false`
    /// (explanations) stores nothing.
    @inline(__always)
    func begin(_ call: String, recording: Bool = true) -> Decider? {
        guard checkVisitorId(call) else { return nil }
        let generation = runtime.generation.value
        let runtime = self.runtime, hash = visitorHash, deferred = creationSegmentsDeferred
        let visitorId = self.visitorId, creationSegments = self.creationSegments
        var storeSegments = false
        // The decider is built under the lock from the state it reads: nothing is copied twice.
        let decider = state.withValue { state -> Decider? in
            let published: SDKRuntime.Published
            if let known = state.published, state.generation == generation {
                published = known
            } else {
                published = runtime.read(hash).state
                state.published = published
                state.generation = generation
            }
            guard let installed = published.installed else { return nil }
            storeSegments = recording && deferred && !state.creationSegmentsStored && state.consent == .granted
            if storeSegments { state.creationSegmentsStored = true }
            let attributes = state.visitorProperties.isEmpty ? state.attributes
                : JSONValue.deepMerging(state.visitorProperties, state.attributes)
            var prefetched: VisitorData?
            if let taken = state.prefetched.take(), taken.namespaceHash == installed.namespaceHash { prefetched = taken.data }
            let input = DecisionInput(visitorId: visitorId, hashSeed: runtime.configuration.hashSeed,
                                      attributes: attributes, locationProperties: state.locationProperties,
                                      creationSegments: creationSegments, stored: prefetched ?? VisitorData())
            return Decider(runtime: runtime, installed: installed, input: input, prefetched: prefetched != nil,
                           visitorHash: hash, preview: state.preview, consented: state.consent == .granted,
                           published: published, contextHooks: state.hooks)
        }
        guard let decider else {
            runtime.log.warn("\(call) before the SDK is ready: degraded result",
                             metadata: runtime.log.isEnabled(.debug)
                                 ? ["convert.call": call, "convert.reason": "notReady", "convert.visitor": loggedVisitorId]
                                 : ["convert.call": call, "convert.reason": "notReady"])
            return nil
        }
        if storeSegments, let creationSegments { _ = store(creationSegments, decider.installed) }
        return decider
    }
}

/// A forced variation from `convert_preview`; a class, so a call carries it as one word.
final class PreviewTarget: Sendable {
    static let attributeKey = "convert_preview"

    let experienceId: String
    let variationId: String

    /// The target `raw` names, `nil` when it is not `{experienceId}.{variationId}` in digits.
    init?(parsing raw: String) {
        let parts = raw.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2,
              parts.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } })
        else { return nil }
        experienceId = String(parts[0])
        variationId = String(parts[1])
    }
}
