import ConvertEnvironment
import ConvertEvents
import ConvertHashing
import ConvertModel
import ConvertRules
import ConvertStorage
import ConvertSynchronization
import ConvertVisitor
import Foundation
#if canImport(Synchronization) && !canImport(Darwin)
import Synchronization
#endif

/// One visitor's view of the SDK: decisions, features, conversions and segments for that visitor.
///
/// Contexts are cheap: create one per request or per screen. All of them share the SDK's
/// config and visitor store, so decisions stay sticky across contexts for the same visitor.
public final class ConvertContext: Sendable {
    let runtime: SDKRuntime
    /// The visitor this context decides for.
    public let visitorId: String
    /// What the context's calls change, behind a lock of its own (read and written through
    /// `withState(_:)`).
    private let state: StateLock

    // Where the standard library's `Mutex` needs no availability check (Linux) it is stored in the
    // context itself, so a context is one allocation; elsewhere state and lock share a second one.
    #if canImport(Synchronization) && !canImport(Darwin)
    private typealias StateLock = Mutex<State>
    #else
    private typealias StateLock = InlineLocked<State>
    #endif

    /// Reads or changes the context's state under its lock; `body` must not call back into it.
    @inline(__always)
    private func withState<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        #if canImport(Synchronization) && !canImport(Darwin)
        try state.withLock { (state: inout sending State) throws -> sending Result in
            #if DEBUG
            LockTally.acquired()
            #endif
            return try body(&state)
        }
        #else
        try state.withValue(body)
        #endif
    }

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
        var hooks: [any EvaluationHook] = []
        /// The SDK's decision state as this context last read it, and the change number it is
        /// at least as new as: calls reuse it while `SDKRuntime.changes` stays there.
        var decision: SDKRuntime.PublishedState?
        var generation: UInt64 = 0
        /// Non-report keys given to ``updateVisitorProperties(_:)``, under the attributes.
        var visitorProperties: [String: JSONValue] = [:]
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
    public static let maximumVisitorIdBytes = 1024

    /// - Parameter deferringSegments: store the creation segments at the first call rather than
    ///   now (a context whose visitor is loaded from a shared store first, so they go over what
    ///   was loaded).
    init(runtime: SDKRuntime, visitorId: String, attributes: [String: JSONValue], deferringSegments: Bool = false) {
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
        if let creationSegments, !deferringSegments {
            let (generation, decision) = runtime.decisionSnapshot(visitorHash)
            let prefetched = Self.prefetch(creationSegments, runtime, decision, visitorId, visitorHash)
            creationSegmentsDeferred = prefetched == nil
            // Built in one expression, so the state is moved into its lock rather than copied.
            state = StateLock(State(attributes: attributes, preview: preview, creationSegmentsStored: prefetched != nil,
                                    prefetched: prefetched, decision: decision, generation: generation))
        } else {
            creationSegmentsDeferred = creationSegments != nil
            state = StateLock(State(attributes: attributes, preview: preview))
        }
        // Last, so the parameter is moved in rather than copied for the uses above.
        self.runtime = runtime
    }

    /// Stores `segments` as the visitor's in the config `decision` holds, if any; the namespace
    /// stored under and the visitor's data after.
    private static func prefetch(_ segments: ReportValues, _ runtime: SDKRuntime, _ decision: SDKRuntime.PublishedState,
                                 _ visitorId: String, _ visitorHash: UInt64) -> (namespaceHash: UInt64, data: VisitorData)? {
        // Read through the optional rather than bound: a binding retains the config around the
        // store's call, in every thread deciding.
        guard let namespaceHash = decision.fields.installed?.namespaceHash,
              let key = decision.fields.installed?.visitorKey(visitorId, visitorHash: visitorHash) else { return nil }
        return (namespaceHash, store(segments, runtime, key))
    }

    /// Stores `segments` as the visitor's; returns the visitor's data after.
    private func store(_ segments: ReportValues, _ installed: InstalledConfig) -> VisitorData {
        Self.store(segments, runtime, storeKey(installed))
    }

    private static func store(_ segments: ReportValues, _ runtime: SDKRuntime, _ key: VisitorKey) -> VisitorData {
        runtime.ports.visitorStore.update(key) { data -> VisitorData in
            data.storeSegmentValues(segments)
            return data
        }
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
    public var visitorAttributes: [String: JSONValue] { withState { $0.attributes } }

    /// Replaces or adds attributes; `nil` values remove keys.
    public func setAttributes(_ values: [String: JSONValue?]) {
        withState { state in
            for (key, value) in values { state.attributes[key] = value }
        }
    }

    /// The properties locations and `site_area` rules are matched against.
    public var visitorLocationProperties: [String: JSONValue] { withState { $0.locationProperties } }

    /// Sets the location properties (replacing the previous ones).
    public func setLocationProperties(_ properties: [String: JSONValue]) {
        withState { $0.locationProperties = properties }
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
        withState { $0.preview = target }
        return true
    }

    /// Ends a preview.
    public func clearPreview() {
        withState { $0.preview = nil }
    }

    /// How loading the visitor's shared data went (`nil` until ``loadVisitorData()``); after
    /// `.failed`, decisions treat the visitor as this instance knows it, new if unknown.
    public var visitorDataLoad: VisitorLoadResult? { withState { $0.loadResult } }

    func setVisitorDataLoad(_ result: VisitorLoadResult) {
        withState { $0.loadResult = result }
    }

    /// Forgets the data prefetched at creation (a load changed the store under it) and stores
    /// the creation segments over what was loaded — again, or for the first time when they
    /// waited for the load — as a returning visitor's new values go over its stored ones.
    func visitorDataLoaded(_ installed: InstalledConfig) {
        withState { state in
            state.prefetched = nil
            state.creationSegmentsStored = true
        }
        if let creationSegments { _ = store(creationSegments, installed) }
    }

    /// Whether a preview is set.
    public var isPreviewing: Bool { withState { $0.preview != nil } }

    /// What one call reads of the context and the SDK, and the visitor's data prefetched at the
    /// context's creation. Taken under the context's lock and moved into the call's decider,
    /// which the engine borrows: no allocation of its own.
    struct Snapshot: ~Copyable {
        let attributes: [String: JSONValue]
        let locationProperties: [String: JSONValue]
        let preview: PreviewTarget?
        /// The SDK's decision state the call reads.
        let decision: SDKRuntime.PublishedState
        /// Forced decisions in effect for this call, `nil` when none.
        var overrides: DecisionOverrides? { decision.fields.overrides }
        /// The SDK's hooks alone: they are told of tracking events.
        var trackingHooks: [any EvaluationHook] { decision.fields.hooks }
        /// The system events that have listeners (``SystemEventHub`` mask).
        var listening: UInt32 { decision.fields.listening }
        /// The SDK's hooks, then the context's.
        let hooks: [any EvaluationHook]
        /// Whether tracking is on for the SDK (configuration and runtime switch).
        let trackingEnabled: Bool
        /// The visitor's data in `prefetchedNamespace` as storing the creation segments left it,
        /// for the context's first call (taken by its decider).
        var prefetched: VisitorData?
        let prefetchedNamespace: UInt64

        /// - Parameters:
        ///   - hooks: the context's own hooks, run after the SDK's.
        ///   - networkTracking: the configuration's switch, under the runtime's.
        init(attributes: [String: JSONValue], locationProperties: [String: JSONValue], preview: PreviewTarget?,
             decision: SDKRuntime.PublishedState, hooks: [any EvaluationHook], networkTracking: Bool,
             prefetched: VisitorData?, prefetchedNamespace: UInt64) {
            self.attributes = attributes
            self.locationProperties = locationProperties
            self.preview = preview
            self.decision = decision
            self.hooks = decision.fields.hooks.isEmpty ? hooks : decision.fields.hooks + hooks
            trackingEnabled = networkTracking && decision.fields.trackingEnabled
            self.prefetched = prefetched
            self.prefetchedNamespace = prefetchedNamespace
        }
    }

    private static func takeSnapshot(_ state: inout State, _ decision: SDKRuntime.PublishedState,
                                     networkTracking: Bool) -> Snapshot {
        let attributes = state.visitorProperties.isEmpty ? state.attributes
            : JSONValue.deepMerging(state.visitorProperties, state.attributes)
        var prefetched: VisitorData?, namespace: UInt64 = 0
        if let taken = state.prefetched.take() { (namespace, prefetched) = taken }
        return Snapshot(attributes: attributes, locationProperties: state.locationProperties, preview: state.preview,
                        decision: decision, hooks: state.hooks, networkTracking: networkTracking,
                        prefetched: prefetched, prefetchedNamespace: namespace)
    }

    /// Deep-merges `values` into the properties kept under the attributes.
    func mergeVisitorProperties(_ values: [String: JSONValue]) {
        withState { $0.visitorProperties = JSONValue.deepMerging($0.visitorProperties, values) }
    }

    /// Adds a hook run around this context's evaluations, after the SDK's hooks.
    public func addHook(_ hook: any EvaluationHook) {
        withState { $0.hooks.append(hook) }
    }

    /// The hooks of a call that could not start (not ready, unusable visitor id).
    func hooksForFailedCall() -> [any EvaluationHook] {
        let (cached, own) = withState { ($0.decision?.fields.hooks, $0.hooks) }
        // A call refused before the SDK was ready has just cached the decision state; one
        // refused for its visitor id never read it.
        let sdk = cached ?? runtime.decisionState.read(visitorHash) { $0.fields.hooks }
        return sdk + own
    }

    /// The one entry of every call that reads or writes the visitor's data: checks the visitor
    /// id, reads the SDK's decision state (from the context's own copy while nothing changed, so
    /// the context's lock is the only one taken), and runs `body` with the call's decider on its
    /// snapshot of the installed config and the context's state (so the data prefetched at
    /// creation serves the first call only). The decider is made in place and lent: returning
    /// it would move its couple of hundred bytes through an enum and an optional.
    ///
    /// Creation attributes' report keys that waited for the first config are stored here, once,
    /// as `setDefaultSegments` would without announcing them: the JavaScript SDK stores them
    /// when a context is created, so a returning visitor keeps them. `recording: false`
    /// (explanations) stores nothing. When the visitor id is unusable or the SDK is not ready
    /// (logged), the call answers `refused`'s value for the reason.
    func withDecider<Result>(_ call: String, recording: Bool = true, refused: (DecisionReason) -> Result,
                             _ body: (inout Decider) -> Result) -> Result {
        if let visitorIdProblem {
            runtime.log.warn("\(call): \(visitorIdProblem); degraded result")
            return refused(.invalidVisitorId)
        }
        let generation = runtime.changes.value
        let runtime = self.runtime, hash = visitorHash, deferred = creationSegmentsDeferred
        let networkTracking = runtime.configuration.networkTracking
        // Filled under the lock; non-copyable, so it is moved into the decider, never copied.
        var taken: Snapshot?
        let (decision, storeSegments) = withState { state -> (SDKRuntime.PublishedState, Bool) in
            let decision: SDKRuntime.PublishedState
            if let known = state.decision, state.generation == generation {
                decision = known
            } else {
                decision = runtime.decisionState.read(hash) { $0 }
                state.decision = decision
                state.generation = generation
            }
            guard decision.fields.installed != nil else { return (decision, false) }
            let storeSegments = recording && deferred && !state.creationSegmentsStored
            if storeSegments { state.creationSegmentsStored = true }
            taken = Self.takeSnapshot(&state, decision, networkTracking: networkTracking)
            return (decision, storeSegments)
        }
        guard let installed = decision.fields.installed, let snapshot = taken.take() else {
            runtime.log.warn("\(call) for visitor \(loggedVisitorId) before the SDK is ready: degraded result")
            return refused(.notReady)
        }
        if storeSegments, let creationSegments { _ = store(creationSegments, installed) }
        var decider = Decider(runtime: runtime, visitorId: visitorId, visitorHash: hash, creationSegments: creationSegments,
                              installed: installed, snapshot: snapshot)
        return body(&decider)
    }
}

/// A forced variation from `convert_preview`.
struct PreviewTarget: Hashable {
    static let attributeKey = "convert_preview"

    let experienceId: String
    let variationId: String

    init?(parsing raw: String) {
        let parts = raw.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2,
              parts.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } })
        else { return nil }
        experienceId = String(parts[0])
        variationId = String(parts[1])
    }
}
