import ConvertEnvironment
import ConvertHashing
import ConvertRules
import ConvertStorage
import ConvertTracking

extension ConvertSwiftSDK {
    /// A context for `visitorId` with its attributes and consent: without consent it decides
    /// (the same answers) but stores and sends nothing until ``ConvertContext/setConsent(_:)``
    /// grants it.
    ///
    /// ```swift
    /// let context = sdk.createContext(visitorId: id, attributes: [:], consent: banner.accepted ? .granted : .denied)
    /// ```
    public func createContext(visitorId: String, attributes: [String: JSONValue] = [:],
                              consent: VisitorConsent) -> ConvertContext {
        ConvertContext(runtime: runtime, visitorId: visitorId, attributes: attributes, consent: consent)
    }

    /// Forgets a visitor: deletes its data from the visitor store (and from the shared store,
    /// when the store is shared) and drops its tracking events not sent yet, from the queue's
    /// journal too. Events already on their way are not recalled; other visitors' are kept.
    ///
    /// - Returns: whether every store deleted the visitor (`false` when no config is installed
    ///   yet, so the visitor's store key is unknown, or a shared store could not delete it).
    @discardableResult
    public func forget(visitorId: String) async -> Bool {
        guard let installed = runtime.current else {
            runtime.log.warn("forget before the SDK is ready: the visitor's stored data and events are not deleted")
            return false
        }
        let discarded = await runtime.ports.trackingSink.discardPending(visitorId: visitorId, accountId: installed.accountId,
                                                                         projectId: installed.projectId)
        if discarded > 0 { runtime.log.info("forget: \(discarded) unsent tracking event(s) dropped") }
        let key = installed.visitorKey(visitorId, visitorHash: KeyHash.hash64(visitorId))
        if let shared = runtime.sharedStore { return await shared.forget(key) }
        runtime.ports.visitorStore.removeData(for: key)
        return true
    }
}
