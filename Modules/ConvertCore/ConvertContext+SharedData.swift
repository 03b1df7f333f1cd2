import ConvertRules
import ConvertStorage

extension ConvertContext {
    /// Loads this visitor's data from a shared visitor store (``SharedVisitorDataStore``, e.g.
    /// Redis) into the SDK's local store, so decisions made next see what other instances
    /// stored: sticky decisions, converted goals, segments. Call it before deciding for a
    /// request; the decisions themselves stay synchronous.
    ///
    /// When the load fails the visitor is decided from what this instance holds (as a new
    /// visitor if nothing) and ``visitorDataLoad`` says so.
    @discardableResult
    public func loadVisitorData() async -> VisitorLoadResult {
        let result: VisitorLoadResult
        if let shared = runtime.sharedStore,
           let call = begin("loadVisitorData", recording: false) {
            result = await shared.load(call.key)
            visitorDataLoaded(call.installed)
        } else {
            result = .notShared
        }
        setVisitorDataLoad(result)
        return result
    }

    /// Writes this visitor's changes to the shared visitor store now rather than behind;
    /// `true` once it has them (or when the store is not shared).
    @discardableResult
    public func saveVisitorData() async -> Bool {
        guard let shared = runtime.sharedStore,
              let call = begin("saveVisitorData", recording: false) else { return true }
        return await shared.save(call.key)
    }
}

extension ConvertSwiftSDK {
    /// A context whose visitor data is loaded from the shared visitor store first (see
    /// ``ConvertContext/loadVisitorData()``); with a store that is not shared, the same as
    /// ``createContext(visitorId:attributes:)``.
    public func loadContext(visitorId: String, attributes: [String: JSONValue] = [:]) async -> ConvertContext {
        guard runtime.sharedStore != nil else {
            // Nothing to load: the creation segments are stored now, and the visitor's data
            // read with them serves the first decision.
            let context = ConvertContext(runtime: runtime, visitorId: visitorId, attributes: attributes)
            context.setVisitorDataLoad(.notShared)
            return context
        }
        let context = ConvertContext(runtime: runtime, visitorId: visitorId, attributes: attributes, deferringSegments: true)
        await context.loadVisitorData()
        return context
    }
}
