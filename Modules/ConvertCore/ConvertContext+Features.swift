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
        withDecider("feature(_:)", refused: { _ in
            _ = failedCall(.feature, key)
            return .disabled(key: key, feature: nil)
        }) { decider in
            var decided = DecidedCarriers()
            guard decider.snapshot.hooks.isEmpty else {
                return decider.hookedFeature(key, typeCasting: typeCasting, enableTracking: enableTracking, decided: &decided).value
            }
            guard let position = decider.installed.config.featureIndex(key: key) else {
                runtime.log.warn("no feature has the key \"\(key)\"")
                return .disabled(key: key, feature: nil)
            }
            return decider.resolve(position, typeCasting: typeCasting, enableTracking: enableTracking, decided: &decided)
        }
    }

    /// Resolves the feature with `key` as ``feature(_:typeCasting:enableTracking:)`` does, and
    /// says why: the deciding experience's reason when it is on, ``EvaluationReason/default``
    /// when no carrier switches it on, an error code when it cannot be resolved; with the
    /// carriers' own details.
    public func featureDetail(_ key: String, typeCasting: Bool = true, enableTracking: Bool = true) -> FeatureDetail {
        withDecider("featureDetail(_:)", refused: { _ in
            let failed = failedCall(.feature, key)
            return FeatureDetail(value: .disabled(key: key, feature: nil), reason: failed.reason, errorCode: failed.errorCode,
                                 experiences: [])
        }) { decider in
            var decided = DecidedCarriers()
            return decider.hookedFeature(key, typeCasting: typeCasting, enableTracking: enableTracking, decided: &decided)
        }
    }

    /// Every declared feature, enabled or disabled, in config order. Synchronous.
    public func features(typeCasting: Bool = true, enableTracking: Bool = true) -> [BucketedFeature] {
        withDecider("features()", refused: { _ in [] }) { decider in
            var decided = DecidedCarriers()
            let count = decider.installed.featurePlans.count
            var resolved: [BucketedFeature] = []
            resolved.reserveCapacity(count)
            if decider.snapshot.hooks.isEmpty {
                for position in 0..<count {
                    resolved.append(decider.resolve(position, typeCasting: typeCasting, enableTracking: enableTracking,
                                                    decided: &decided))
                }
            } else {
                let features = decider.installed.config.features
                for position in 0..<count {
                    resolved.append(decider.hookedFeature(features[position].key, at: position, typeCasting: typeCasting,
                                                          enableTracking: enableTracking, decided: &decided).value)
                }
            }
            return resolved
        }
    }

    /// Explains, experience by experience, how the feature with `key` would be resolved, without
    /// storing, tracking or announcing anything. Synchronous.
    public func explanation(forFeature key: String) -> [DecisionTrace] {
        withDecider("explanation(forFeature:)", recording: false, refused: { _ in [] }) { decider in
            guard let feature = decider.config.feature(key: key) else { return [] }
            var traces: [DecisionTrace] = []
            for position in decider.config.carrierIndexes(featureId: feature.id) {
                traces.append(decider.trace(position: position))
            }
            return traces
        }
    }

    /// The seed API's name for ``feature(_:typeCasting:enableTracking:)``.
    public func runFeature(_ key: String, typeCasting: Bool = true, enableTracking: Bool = true) async -> BucketedFeature {
        feature(key, typeCasting: typeCasting, enableTracking: enableTracking)
    }

    /// ``runFeature(_:typeCasting:enableTracking:)`` with a completion handler.
    public func runFeature(_ key: String, typeCasting: Bool = true, enableTracking: Bool = true,
                           completion: @escaping @Sendable (BucketedFeature) -> Void) {
        Task { completion(await runFeature(key, typeCasting: typeCasting, enableTracking: enableTracking)) }
    }

    /// The seed API's name for ``features(typeCasting:enableTracking:)``.
    public func runFeatures(typeCasting: Bool = true, enableTracking: Bool = true) async -> [BucketedFeature] {
        features(typeCasting: typeCasting, enableTracking: enableTracking)
    }

    /// ``runFeatures(typeCasting:enableTracking:)`` with a completion handler.
    public func runFeatures(typeCasting: Bool = true, enableTracking: Bool = true,
                            completion: @escaping @Sendable ([BucketedFeature]) -> Void) {
        Task { completion(await runFeatures(typeCasting: typeCasting, enableTracking: enableTracking)) }
    }

    /// The seed API's name for ``explanation(forFeature:)``.
    public func explainFeature(_ key: String) async -> [DecisionTrace] {
        explanation(forFeature: key)
    }
}
