import ConvertEnvironment
import ConvertModel
import ConvertRules

extension Decider {
    /// The detail of the feature with `key`, with the call's hooks around it; carriers already
    /// in `decided` (by an earlier feature of the same call) are not decided again.
    mutating func hookedFeature(_ key: String, typeCasting: Bool, enableTracking: Bool,
                                decided: inout DecidedCarriers) -> FeatureDetail {
        hookedFeature(key, installed.config.feature(key: key), typeCasting: typeCasting, enableTracking: enableTracking,
                      decided: &decided)
    }

    /// ``hookedFeature(_:typeCasting:enableTracking:decided:)`` for `feature`, already found
    /// (`nil`: no feature has `key`).
    mutating func hookedFeature(_ key: String, _ feature: Feature?, typeCasting: Bool, enableTracking: Bool,
                                decided: inout DecidedCarriers) -> FeatureDetail {
        let hooks = snapshot.hooks
        let context = hooks.isEmpty ? nil : HookContext(flagKind: .feature, key: key, visitorId: visitorId,
                                                        attributes: snapshot.attributes)
        if let context { runtime.runHooks(hooks, "before") { try $0.before(context) } }
        let result = resolveDetail(key, feature, typeCasting: typeCasting, enableTracking: enableTracking, decided: &decided)
        if let context { runtime.finishHooks(hooks, context, .feature(result)) }
        return result
    }

    private mutating func resolveDetail(_ key: String, _ feature: Feature?, typeCasting: Bool, enableTracking: Bool,
                                        decided: inout DecidedCarriers) -> FeatureDetail {
        guard let feature else {
            runtime.log.warn("no feature has the key \"\(key)\"")
            return FeatureDetail(value: .disabled(key: key, feature: nil), reason: .error, errorCode: .flagNotFound,
                                 experiences: [])
        }
        if let forced = forcedFeature(feature) {
            return FeatureDetail(value: forced, reason: .static, errorCode: nil, experiences: [])
        }
        var details: [VariationDetail]? = []
        let value = resolve(feature, typeCasting: typeCasting, enableTracking: enableTracking, decided: &decided,
                            details: &details)
        let experiences = details ?? []
        let reason = value.isEnabled ? experiences.last?.reason ?? .default : .default
        return FeatureDetail(value: value, reason: reason, errorCode: nil, experiences: experiences)
    }

    /// The feature as the first carrier that switches it on gives it. With `details`, each
    /// carrier looked at is described there.
    mutating func resolve(_ feature: Feature, typeCasting: Bool, enableTracking: Bool,
                          decided: inout DecidedCarriers) -> BucketedFeature {
        if let forced = forcedFeature(feature) { return forced }
        var details: [VariationDetail]?
        return resolve(feature, typeCasting: typeCasting, enableTracking: enableTracking, decided: &decided,
                       details: &details)
    }

    private mutating func resolve(_ feature: Feature, typeCasting: Bool, enableTracking: Bool,
                                  decided: inout DecidedCarriers, details: inout [VariationDetail]?) -> BucketedFeature {
        for index in installed.config.carrierIndexes(featureId: feature.id) {
            let experience = installed.config.experiences[index]
            let variation: BucketedVariation?
            if details != nil {
                let detail = decided.details[index] ?? detail(position: index, enableTracking: enableTracking)
                decided.details[index] = detail
                details?.append(detail)
                variation = detail.value
            } else if let cached = decided.variations[index] {
                variation = cached
            } else {
                variation = decide(position: index, enableTracking: enableTracking)
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
    private func forcedFeature(_ feature: Feature) -> BucketedFeature? {
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
