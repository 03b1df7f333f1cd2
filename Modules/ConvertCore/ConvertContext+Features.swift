import ConvertEnvironment
import ConvertModel
import ConvertRules

extension ConvertContext {
    /// The feature with `key` for this visitor: enabled with its variables when an experience
    /// carrying it gives the visitor a variation that switches it on, disabled otherwise.
    ///
    /// Experiences are decided as ``variation(forExperience:enableTracking:)`` would (so new
    /// decisions are stored and tracked), in config order; the first that carries the feature
    /// wins. Synchronous and non-blocking.
    ///
    /// ```swift
    /// if context.feature("new-checkout").isEnabled { … }
    /// ```
    public func feature(_ key: String, typeCasting: Bool = true, enableTracking: Bool = true) -> BucketedFeature {
        feature(key, typeCasting: typeCasting, exposure: enableTracking ? .automatic : .none)
    }

    /// The feature with `key` as ``feature(_:typeCasting:enableTracking:)`` resolves it, the
    /// bucketing events of the experiences decided for it sent as `exposure` says (with
    /// ``Exposure/manual``, by ``trackExposure(forFeature:)``).
    ///
    /// ```swift
    /// let checkout = context.feature("new-checkout", exposure: .manual)
    /// ```
    public func feature(_ key: String, typeCasting: Bool = true, exposure: Exposure) -> BucketedFeature {
        guard var decider = begin("feature(_:)") else {
            _ = failedCall(.feature, key)
            return .disabled(key: key, feature: nil)
        }
        var decided = DecidedCarriers()
        var detail: FeatureDetail?
        return decider.feature(key, at: decider.config.featureIndex(key: key), in: decider.installed, typeCasting: typeCasting,
                               exposure: exposure, detailed: false, decided: &decided, detail: &detail)
    }

    /// Resolves the feature with `key` as ``feature(_:typeCasting:enableTracking:)`` does, and
    /// says why: the deciding experience's reason when it is on, ``EvaluationReason/default``
    /// when no carrier switches it on, an error code when it cannot be resolved; with the
    /// carriers' own details.
    public func featureDetail(_ key: String, typeCasting: Bool = true, enableTracking: Bool = true) -> FeatureDetail {
        featureDetail(key, typeCasting: typeCasting, exposure: enableTracking ? .automatic : .none)
    }

    /// ``featureDetail(_:typeCasting:enableTracking:)`` with the exposure of
    /// ``feature(_:typeCasting:exposure:)``.
    public func featureDetail(_ key: String, typeCasting: Bool = true, exposure: Exposure) -> FeatureDetail {
        guard var decider = begin("featureDetail(_:)") else {
            let failed = failedCall(.feature, key)
            return FeatureDetail(value: .disabled(key: key, feature: nil), reason: failed.reason, errorCode: failed.errorCode,
                                 experiences: [])
        }
        var decided = DecidedCarriers()
        var detail: FeatureDetail?
        let value = decider.feature(key, at: decider.config.featureIndex(key: key), in: decider.installed, typeCasting: typeCasting,
                                    exposure: exposure, detailed: true, decided: &decided, detail: &detail)
        return detail ?? FeatureDetail(value: value, reason: .default, errorCode: nil, experiences: [])
    }

    /// Every declared feature, enabled or disabled, in config order. Synchronous.
    public func features(typeCasting: Bool = true, enableTracking: Bool = true) -> [BucketedFeature] {
        features(typeCasting: typeCasting, exposure: enableTracking ? .automatic : .none)
    }

    /// ``features(typeCasting:enableTracking:)`` with the exposure of
    /// ``feature(_:typeCasting:exposure:)``.
    public func features(typeCasting: Bool = true, exposure: Exposure) -> [BucketedFeature] {
        guard var decider = begin("features()") else { return [] }
        var decided = DecidedCarriers()
        // One reference for the call: each feature borrows the config from here.
        let installed = decider.installed
        let count = installed.featurePlans.count
        var resolved: [BucketedFeature] = []
        resolved.reserveCapacity(count)
        var detail: FeatureDetail?
        for position in 0..<count {
            let key = installed.withFeaturePlan(at: position) { $0.key }
            resolved.append(decider.feature(key, at: position, in: installed, typeCasting: typeCasting,
                                            exposure: exposure, detailed: false, decided: &decided,
                                            detail: &detail))
        }
        return resolved
    }

    /// Explains, experience by experience, how the feature with `key` would be resolved, without
    /// storing, tracking or announcing anything. Synchronous.
    public func explanation(forFeature key: String) -> [DecisionTrace] {
        guard var decider = begin("explanation(forFeature:)", recording: false),
              let feature = decider.config.feature(key: key) else { return [] }
        var traces: [DecisionTrace] = []
        for position in decider.config.carrierIndexes(featureId: feature.id) {
            traces.append(decider.trace(position))
        }
        return traces
    }

    /// ``feature(_:typeCasting:enableTracking:)``, for code written with `await`.
    public func runFeature(_ key: String, typeCasting: Bool = true, enableTracking: Bool = true) async -> BucketedFeature {
        feature(key, typeCasting: typeCasting, enableTracking: enableTracking)
    }

    /// ``feature(_:typeCasting:exposure:)``, for code written with `await`.
    public func runFeature(_ key: String, typeCasting: Bool = true, exposure: Exposure) async -> BucketedFeature {
        feature(key, typeCasting: typeCasting, exposure: exposure)
    }

    /// ``runFeature(_:typeCasting:enableTracking:)`` with a completion handler.
    public func runFeature(_ key: String, typeCasting: Bool = true, enableTracking: Bool = true,
                           completion: @escaping @Sendable (BucketedFeature) -> Void) {
        Task { completion(await runFeature(key, typeCasting: typeCasting, enableTracking: enableTracking)) }
    }

    /// ``features(typeCasting:enableTracking:)``, for code written with `await`.
    public func runFeatures(typeCasting: Bool = true, enableTracking: Bool = true) async -> [BucketedFeature] {
        features(typeCasting: typeCasting, enableTracking: enableTracking)
    }

    /// ``features(typeCasting:exposure:)``, for code written with `await`.
    public func runFeatures(typeCasting: Bool = true, exposure: Exposure) async -> [BucketedFeature] {
        features(typeCasting: typeCasting, exposure: exposure)
    }

    /// ``runFeatures(typeCasting:enableTracking:)`` with a completion handler.
    public func runFeatures(typeCasting: Bool = true, enableTracking: Bool = true,
                            completion: @escaping @Sendable ([BucketedFeature]) -> Void) {
        Task { completion(await runFeatures(typeCasting: typeCasting, enableTracking: enableTracking)) }
    }

    /// ``explanation(forFeature:)``, for code written with `await`.
    public func explainFeature(_ key: String) async -> [DecisionTrace] {
        explanation(forFeature: key)
    }
}
