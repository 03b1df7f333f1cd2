import ConvertEnvironment
import ConvertModel
import ConvertRules
import ConvertStorage
import ConvertVisitor

/// The JavaScript SDK's context calls that have no decision of their own: visitor properties,
/// visitor data, config entities, releasing the queues.
extension ConvertContext {
    /// Adds properties to the visitor's audience data for this context's later decisions, as
    /// the JavaScript SDK's `updateVisitorProperties(visitorId, visitorProperties)` does for the
    /// context's visitor.
    ///
    /// The report keys among them (``VisitorSegments/reportKeys``) are stored as the visitor's
    /// segments, merged with the stored ones as JavaScript merges them (lists united, objects
    /// member by member, other values replaced): every later context of the visitor reads them
    /// and tracking sends them. The other keys are kept by this context, deep-merged with the
    /// ones given before, beneath its own attributes (an attribute of the same key wins, as the
    /// JavaScript SDK's context properties win over stored ones). No `segments` event fires.
    ///
    /// Nothing changes while the context previews. Before a config is installed the report
    /// keys cannot be stored (the store key needs the project): they are logged and dropped.
    ///
    /// Differs from JavaScript in one place: JavaScript also keeps the non-report keys in its
    /// process-wide visitor cache, so other contexts of the visitor in the same process read
    /// them; here they are the context's, and visitor data holds only report keys (what
    /// JavaScript writes to a data store).
    public func updateVisitorProperties(_ properties: [String: JSONValue]) {
        let call = "updateVisitorProperties"
        guard checkVisitorId(call) else { return }
        if isPreviewing {
            runtime.log.debug("\(call): previewing, nothing changed")
            return
        }
        let reportKeys = Set(VisitorSegments.reportKeys)
        let others = properties.filter { !reportKeys.contains($0.key) }
        if !others.isEmpty { mergeVisitorProperties(others) }
        let report = VisitorSegments.reportValues(in: properties)
        guard !report.isEmpty else { return }
        guard let decider = begin(call), decider.consented else { return }
        var refused: [String] = []
        runtime.ports.visitorStore.update(decider.key) { data in
            refused = []
            _ = data.storeSegmentValues(report, refused: &refused)
        }
        runtime.logRefusedSegments(refused)
    }

    /// What the SDK holds for this visitor: sticky decisions (experience id → variation id),
    /// converted goals, report segments and matched locations. The JavaScript SDK's
    /// `getVisitorData()`. Empty before a config is installed and for an unusable visitor id.
    ///
    /// With a shared visitor store it is this instance's copy: ``loadVisitorData()`` first
    /// brings in what other instances stored.
    public func visitorData() -> VisitorData {
        // The call's start stores the creation segments that waited for the first config.
        guard let call = begin("visitorData") else { return VisitorData() }
        return runtime.ports.visitorStore.data(for: call.key) ?? VisitorData()
    }

    /// The entity of `kind` with this key in the installed config, `nil` before readiness or
    /// when there is none. The JavaScript SDK's `getConfigEntity(key, entityType)`.
    ///
    /// ```swift
    /// let goal = context.configEntity(.goal, key: "button-primary-click")   // Goal?
    /// ```
    public func configEntity<Entity>(_ kind: ConfigEntityKind<Entity>, key: String) -> Entity? {
        begin("configEntity", recording: false)?.config.entity(kind, key: key)
    }

    /// The entity of `kind` with this id in the installed config, `nil` before readiness or
    /// when there is none. The JavaScript SDK's `getConfigEntityById(id, entityType)`.
    public func configEntity<Entity>(_ kind: ConfigEntityKind<Entity>, id: String) -> Entity? {
        begin("configEntity", recording: false)?.config.entity(kind, id: id)
    }

    /// Delivers pending tracking events and writes pending visitor data now, for every visitor
    /// (the queues are the SDK's); the same as ``ConvertSwiftSDK/flush()``. The JavaScript SDK's
    /// `releaseQueues()`.
    public func flush() async {
        await runtime.releaseQueues()
    }

    /// Like ``flush()``, waiting at most `timeout`; the same as ``ConvertSwiftSDK/flush(timeout:)``.
    /// - Returns: `true` once every event enqueued before the call is acknowledged by the
    ///   server (or refused by it and given up), `false` when `timeout` passed first.
    @discardableResult
    public func flush(timeout: Duration) async -> Bool {
        await runtime.releaseQueues(timeout: timeout)
    }
}
