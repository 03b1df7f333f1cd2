import ConvertModel
import ConvertRules
import ConvertSupport

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
        guard case (let installed, var snapshot)? = begin("feature(_:)") else {
            _ = failedCall(.feature, key)
            return .disabled(key: key, feature: nil)
        }
        var decided = DecidedCarriers(count: installed.plans.count)
        guard snapshot.hooks.isEmpty else {
            return hookedFeature(key, installed, &snapshot, typeCasting: typeCasting, enableTracking: enableTracking,
                                 decided: &decided).value
        }
        guard let feature = installed.config.feature(key: key) else {
            core.log.warn("no feature has the key \"\(key)\"")
            return .disabled(key: key, feature: nil)
        }
        return resolve(feature, installed, &snapshot, typeCasting: typeCasting, enableTracking: enableTracking, decided: &decided)
    }

    /// Resolves the feature with `key` as ``feature(_:typeCasting:enableTracking:)`` does, and
    /// says why: the deciding experience's reason when it is on, ``EvaluationReason/default``
    /// when no carrier switches it on, an error code when it cannot be resolved; with the
    /// carriers' own details.
    public func featureDetail(_ key: String, typeCasting: Bool = true, enableTracking: Bool = true) -> FeatureDetail {
        guard case (let installed, var snapshot)? = begin("featureDetail(_:)") else {
            let failed = failedCall(.feature, key)
            return FeatureDetail(value: .disabled(key: key, feature: nil), reason: failed.reason, errorCode: failed.errorCode,
                                 experiences: [])
        }
        var decided = DecidedCarriers(count: installed.plans.count)
        return hookedFeature(key, installed, &snapshot, typeCasting: typeCasting, enableTracking: enableTracking,
                             decided: &decided)
    }

    /// The detail of the feature with `key`, with the call's hooks around it; carriers already
    /// in `decided` (by an earlier feature of the same call) are not decided again.
    private func hookedFeature(_ key: String, _ installed: InstalledConfig, _ snapshot: inout Snapshot, typeCasting: Bool,
                               enableTracking: Bool, decided: inout DecidedCarriers) -> FeatureDetail {
        let hooks = snapshot.hooks
        let context = hooks.isEmpty ? nil : HookContext(flagKind: .feature, key: key, visitorId: visitorId,
                                                        attributes: snapshot.attributes)
        if let context { core.runHooks(hooks, "before") { try $0.before(context) } }
        let result = resolveDetail(key, installed, &snapshot, typeCasting: typeCasting, enableTracking: enableTracking,
                                   decided: &decided)
        if let context { finishHooks(hooks, context, .feature(result)) }
        return result
    }

    private func resolveDetail(_ key: String, _ installed: InstalledConfig, _ snapshot: inout Snapshot, typeCasting: Bool,
                               enableTracking: Bool, decided: inout DecidedCarriers) -> FeatureDetail {
        guard let feature = installed.config.feature(key: key) else {
            core.log.warn("no feature has the key \"\(key)\"")
            return FeatureDetail(value: .disabled(key: key, feature: nil), reason: .error, errorCode: .flagNotFound,
                                 experiences: [])
        }
        if let forced = forcedFeature(feature, snapshot) {
            return FeatureDetail(value: forced, reason: .static, errorCode: nil, experiences: [])
        }
        var details: [VariationDetail]? = []
        let value = resolve(feature, installed, &snapshot, typeCasting: typeCasting, enableTracking: enableTracking,
                            decided: &decided, details: &details)
        let experiences = details ?? []
        let reason = value.isEnabled ? experiences.last?.reason ?? .default : .default
        return FeatureDetail(value: value, reason: reason, errorCode: nil, experiences: experiences)
    }

    /// Every declared feature, enabled or disabled, in config order. Synchronous.
    public func features(typeCasting: Bool = true, enableTracking: Bool = true) -> [BucketedFeature] {
        guard case (let installed, var snapshot)? = begin("features()") else { return [] }
        var decided = DecidedCarriers(count: installed.plans.count)
        let features = installed.config.features
        var resolved: [BucketedFeature] = []
        resolved.reserveCapacity(features.count)
        for feature in features {
            if snapshot.hooks.isEmpty {
                resolved.append(resolve(feature, installed, &snapshot, typeCasting: typeCasting, enableTracking: enableTracking,
                                        decided: &decided))
            } else {
                resolved.append(hookedFeature(feature.key, installed, &snapshot, typeCasting: typeCasting,
                                              enableTracking: enableTracking, decided: &decided).value)
            }
        }
        return resolved
    }

    /// Explains, experience by experience, how the feature with `key` would be resolved, without
    /// storing, tracking or announcing anything. Synchronous.
    public func explanation(forFeature key: String) -> [DecisionTrace] {
        guard let installed = core.current(visitorHash), let feature = installed.config.feature(key: key) else { return [] }
        return installed.config.experiencesCarrying(featureId: feature.id).map { explanation(forExperience: $0.key) }
    }

    /// The seed API's name for ``feature(_:typeCasting:enableTracking:)``.
    public func runFeature(_ key: String, typeCasting: Bool = true, enableTracking: Bool = true) async -> BucketedFeature {
        feature(key, typeCasting: typeCasting, enableTracking: enableTracking)
    }

    /// The seed API's name for ``features(typeCasting:enableTracking:)``.
    public func runFeatures(typeCasting: Bool = true, enableTracking: Bool = true) async -> [BucketedFeature] {
        features(typeCasting: typeCasting, enableTracking: enableTracking)
    }

    /// The seed API's name for ``explanation(forFeature:)``.
    public func explainFeature(_ key: String) async -> [DecisionTrace] {
        explanation(forFeature: key)
    }

    /// The feature as the first carrier that switches it on gives it. With `details`, each
    /// carrier looked at is described there.
    private func resolve(_ feature: Feature, _ installed: InstalledConfig, _ snapshot: inout Snapshot, typeCasting: Bool,
                         enableTracking: Bool, decided: inout DecidedCarriers) -> BucketedFeature {
        var details: [VariationDetail]?
        return resolve(feature, installed, &snapshot, typeCasting: typeCasting, enableTracking: enableTracking,
                       decided: &decided, details: &details)
    }

    private func resolve(_ feature: Feature, _ installed: InstalledConfig, _ snapshot: inout Snapshot, typeCasting: Bool,
                         enableTracking: Bool, decided: inout DecidedCarriers,
                         details: inout [VariationDetail]?) -> BucketedFeature {
        if let forced = forcedFeature(feature, snapshot) { return forced }
        for index in installed.config.carrierIndexes(featureId: feature.id) {
            let experience = installed.config.experiences[index]
            let variation: BucketedVariation?
            if details != nil {
                let detail = decided.details[index] ?? detail(position: index, installed, &snapshot, enableTracking: enableTracking)
                decided.details[index] = detail
                details?.append(detail)
                variation = detail.value
            } else if let cached = decided.variations[index] {
                variation = cached
            } else {
                variation = decide(position: index, installed, &snapshot, enableTracking: enableTracking)
                decided.variations[index] = .some(variation)
            }
            guard let variation, let change = variation.variation.featureChange(featureId: feature.id) else { continue }
            return BucketedFeature(key: feature.key, id: feature.id, name: feature.name, status: .enabled,
                                   experienceId: experience.id, experienceKey: experience.key,
                                   variationId: variation.id, variationKey: variation.key,
                                   variables: typeCasting ? cast(change.variables, feature) : change.variables)
        }
        return .disabled(key: feature.key, feature: feature)
    }

    /// The feature as a QA override forces it for this visitor, if one does.
    private func forcedFeature(_ feature: Feature, _ snapshot: Snapshot) -> BucketedFeature? {
        guard let forced = snapshot.overrides?.feature(feature.key, visitorId: visitorId) else { return nil }
        return BucketedFeature(key: feature.key, id: feature.id, name: feature.name, status: forced.enabled ? .enabled : .disabled,
                               experienceId: nil, experienceKey: nil, variationId: nil, variationKey: nil,
                               variables: forced.enabled ? forced.variables : [:])
    }

    private func cast(_ variables: [String: JSONValue], _ feature: Feature) -> [String: JSONValue] {
        var out = variables
        for declared in feature.variables {
            if let value = variables[declared.key] {
                out[declared.key] = FeatureCasting.cast(value, to: declared.type)
            }
        }
        return out
    }
}

/// The carrier experiences one call has decided, each once: their variations on the plain
/// path, their details on the detail path.
struct DecidedCarriers {
    var variations: [BucketedVariation??]
    /// By experience position; empty (no allocation) on the plain path.
    var details: [Int: VariationDetail] = [:]

    init(count: Int) {
        variations = Array(repeating: nil, count: count)
    }
}
