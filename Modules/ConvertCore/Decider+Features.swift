import ConvertEnvironment
import ConvertModel
import ConvertRules

extension Decider {
    /// The feature with `key` (at `position` in the config's features, `nil` when no feature
    /// has it), resolved with the call's hooks around it; its detail in `detail` when `detailed`
    /// (or hooks asked for it). Carriers already in `decided` (by an earlier feature of the same
    /// call) are not decided again.
    mutating func feature(_ key: String, at position: Int?, typeCasting: Bool, exposure: Exposure, detailed: Bool,
                          decided: inout DecidedCarriers, detail: inout FeatureDetail?) -> BucketedFeature {
        let hook = startHooks(.feature, key)
        let value: BucketedFeature
        if let position {
            if let forced = forcedFeature(installed.featurePlans[position]) {
                value = forced
                detail = FeatureDetail(value: forced, reason: .static, errorCode: nil, experiences: [])
            } else {
                var details: [VariationDetail]? = detailed || hook != nil ? [] : nil
                value = resolve(position, typeCasting: typeCasting, exposure: exposure, decided: &decided,
                                details: &details)
                detail = details.map { experiences in
                    let reason = value.isEnabled ? experiences.last?.reason ?? .default : .default
                    return FeatureDetail(value: value, reason: reason, errorCode: nil, experiences: experiences)
                }
            }
        } else {
            runtime.log.warn("no feature has the key \"\(key)\"",
                             metadata: ["convert.feature": key, "convert.reason": "flagNotFound"])
            value = .disabled(key: key, feature: nil)
            detail = FeatureDetail(value: value, reason: .error, errorCode: .flagNotFound, experiences: [])
        }
        if let hook, let detail { runtime.finishHooks(hooks, hook, .feature(detail)) }
        return value
    }

    /// The feature at `position` in the config's features as the first carrier that switches it
    /// on gives it. With `details`, each carrier looked at is described there.
    private mutating func resolve(_ position: Int, typeCasting: Bool, exposure: Exposure,
                                  decided: inout DecidedCarriers, details: inout [VariationDetail]?) -> BucketedFeature {
        let plan = installed.featurePlans[position]
        for (carrier, index) in plan.carriers.enumerated() {
            let variationIndex: Int?
            if details != nil {
                let known = decided.details[index] ?? {
                    let experience = installed.experiences[index]
                    let outcome = decide(experience, at: index, exposure: exposure)
                    let detail = self.detail(outcome, of: experience, value: variation(outcome, of: experience))
                    return (detail, outcome.variationIndex)
                }()
                decided.details[index] = known
                details?.append(known.detail)
                variationIndex = known.variationIndex
            } else if let cached = decided.variationIndex(index) {
                variationIndex = cached
            } else {
                variationIndex = decide(installed.experiences[index], at: index, exposure: exposure).variationIndex
                decided.remember(index, variationIndex)
            }
            if let variationIndex, let result = plan.result(carrier: carrier, variationIndex: variationIndex,
                                                           typeCasting: typeCasting) {
                return result
            }
        }
        return plan.disabled
    }

    /// The feature as a QA override forces it for this visitor, if one does.
    func forcedFeature(_ plan: FeaturePlan) -> BucketedFeature? {
        let feature = plan.disabled
        guard let forced = overrides?.feature(feature.key, visitorId: visitorId) else { return nil }
        return BucketedFeature(key: feature.key, id: feature.id, name: feature.name, status: forced.enabled ? .enabled : .disabled,
                               experienceId: nil, experienceKey: nil, variationId: nil, variationKey: nil,
                               variables: forced.enabled ? forced.variables : [:])
    }
}

/// The carrier experiences one call has decided, each once: the index of their variation on
/// the plain path, their details on the detail path.
struct DecidedCarriers {
    // The first four inline: a call rarely decides more carriers, and an array per call costs
    // an allocation. Positions are -1 while unused; an index of -1 is "no variation".
    private var positions: (Int, Int, Int, Int) = (-1, -1, -1, -1)
    private var indexes: (Int, Int, Int, Int) = (-1, -1, -1, -1)
    private var more: [Int: Int] = [:]
    /// By experience position, with the variation's index; empty (no allocation) on the plain
    /// path.
    var details: [Int: (detail: VariationDetail, variationIndex: Int?)] = [:]

    /// The index of the variation decided for the experience at `position` (`.some(nil)`:
    /// none), or `nil` when it was not decided yet.
    func variationIndex(_ position: Int) -> Int?? {
        let index: Int
        if positions.0 == position {
            index = indexes.0
        } else if positions.1 == position {
            index = indexes.1
        } else if positions.2 == position {
            index = indexes.2
        } else if positions.3 == position {
            index = indexes.3
        } else if let found = more[position] {
            index = found
        } else {
            return nil
        }
        return .some(index < 0 ? nil : index)
    }

    /// Remembers the index of the variation decided for the experience at `position`.
    mutating func remember(_ position: Int, _ variationIndex: Int?) {
        let index = variationIndex ?? -1
        if positions.0 < 0 {
            (positions.0, indexes.0) = (position, index)
        } else if positions.1 < 0 {
            (positions.1, indexes.1) = (position, index)
        } else if positions.2 < 0 {
            (positions.2, indexes.2) = (position, index)
        } else if positions.3 < 0 {
            (positions.3, indexes.3) = (position, index)
        } else {
            more[position] = index
        }
    }
}
