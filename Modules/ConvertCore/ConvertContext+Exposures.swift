import ConvertEnvironment
import ConvertModel

extension ConvertContext {
    /// Sends the bucketing event of the visitor's decision for the experience with `key`, made
    /// earlier with ``Exposure/manual``: call it when the variation is shown.
    ///
    /// The event goes out once per visitor, experience and variation: across repeated calls,
    /// across restarts (the exposure is recorded in the visitor's stored data) and, with a
    /// shared visitor store, across instances (recorded there once, as conversions are).
    ///
    /// ```swift
    /// if let variation = context.variation(forExperience: "checkout-test", exposure: .manual) {
    ///     render(variation.key)
    ///     await context.trackExposure(forExperience: "checkout-test")
    /// }
    /// ```
    @discardableResult
    public func trackExposure(forExperience key: String) async -> ExposureResult {
        guard var call = begin("trackExposure(forExperience:)") else { return .notDecided }
        guard let position = call.installed.experiencePosition(key: key) else {
            runtime.log.warn("trackExposure: no experience has the key \"\(key)\"",
                             metadata: ["convert.experience": key, "convert.reason": "experienceNotFound"])
            return .notDecided
        }
        return await call.trackExposure(at: position)
    }

    /// Sends the bucketing events of the experiences that gave the visitor the feature with
    /// `key`, decided earlier with ``Exposure/manual``
    /// (``feature(_:typeCasting:exposure:)``): each carrier experience with a decision, in config
    /// order, up to the one that switches the feature on; each event once, as
    /// ``trackExposure(forExperience:)`` sends it.
    /// - Returns: ``ExposureResult/tracked`` when an event was sent, else what the carriers
    ///   found (``ExposureResult/notDecided`` when none has a decision).
    @discardableResult
    public func trackExposure(forFeature key: String) async -> ExposureResult {
        guard var call = begin("trackExposure(forFeature:)") else { return .notDecided }
        guard let position = call.config.featureIndex(key: key) else {
            runtime.log.warn("trackExposure: no feature has the key \"\(key)\"",
                             metadata: ["convert.feature": key, "convert.reason": "flagNotFound"])
            return .notDecided
        }
        return await call.trackFeatureExposure(at: position).combined
    }
}
