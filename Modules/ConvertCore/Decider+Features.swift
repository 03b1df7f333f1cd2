import ConvertEnvironment
import ConvertModel
import ConvertRules

extension Decider {
    /// The feature with `key` (at `position` in the config's features, `nil` when no feature
    /// has it), resolved with the call's hooks around it; its detail in `detail` when `detailed`
    /// (or hooks asked for it). Carriers already in `decided` (by an earlier feature of the same
    /// call) are not decided again.
    ///
    /// `installed` is the decider's own config, passed so that a mutating call borrows it.
    mutating func feature(_ key: String, at position: Int?, in installed: InstalledConfig, typeCasting: Bool, exposure: Exposure,
                          detailed: Bool, decided: inout DecidedCarriers, detail: inout FeatureDetail?) -> BucketedFeature {
        let hook = startHooks(.feature, key)
        let value: BucketedFeature
        if let position {
            if overrides != nil, let forced = installed.withFeaturePlan(at: position, forcedFeature) {
                value = forced
                detail = FeatureDetail(value: forced, reason: .static, errorCode: nil, experiences: [])
            } else {
                // Hooks that do not read the carriers' details get the feature's own: no carrier
                // is described, and the reason is the deciding carrier's.
                var details: [VariationDetail]? = detailed || (hook != nil && hooks.readsFeatureExperiences) ? [] : nil
                var reason: EvaluationReason? = hook != nil ? .default : nil
                value = installed.withFeaturePlan(at: position) { plan in
                    resolve(plan, in: installed, typeCasting: typeCasting, exposure: exposure, decided: &decided,
                            details: &details, reason: &reason)
                }
                if let experiences = details {
                    let reason = value.isEnabled ? experiences.last?.reason ?? .default : .default
                    detail = FeatureDetail(value: value, reason: reason, errorCode: nil, experiences: experiences)
                } else if let reason {
                    detail = FeatureDetail(value: value, reason: value.isEnabled ? reason : .default, errorCode: nil,
                                           experiences: [])
                } else {
                    detail = nil
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
    /// on gives it. With `details`, each carrier looked at is described there; with `reason`,
    /// the reason of the carrier that switched it on is set there.
    private mutating func resolve(_ plan: FeaturePlan, in installed: InstalledConfig, typeCasting: Bool, exposure: Exposure,
                                  decided: inout DecidedCarriers, details: inout [VariationDetail]?,
                                  reason: inout EvaluationReason?) -> BucketedFeature {
        for (carrier, index) in plan.carriers.enumerated() {
            let variationIndex: Int?
            if details != nil {
                if let known = decided.detail(index) {
                    details?.append(known.detail)
                    variationIndex = known.variationIndex
                } else {
                    let (detail, outcome) = installed.withExperience(at: index) { experience, ids in
                        let outcome = decide(experience, ids, at: index, in: installed, exposure: exposure)
                        return (Self.detail(outcome, of: experience, in: installed, value: Self.variation(outcome, of: experience)), outcome)
                    }
                    decided.remember(index, detail, outcome.variationIndex)
                    details?.append(detail)
                    variationIndex = outcome.variationIndex
                }
            } else if let cached = decided.variationIndex(index) {
                variationIndex = cached.variationIndex
                if reason != nil { reason = cached.reason }
            } else {
                let wantsReason = reason != nil
                let (outcome, decidedReason) = installed.withExperience(at: index) { experience, ids in
                    let outcome = decide(experience, ids, at: index, in: installed, exposure: exposure)
                    return (outcome, wantsReason ? Self.reason(outcome, of: experience) : EvaluationReason.default)
                }
                variationIndex = outcome.variationIndex
                if wantsReason { reason = decidedReason }
                decided.remember(index, variationIndex, decidedReason)
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
    /// The decisions' reasons, kept for hooks (`.default` when no hook asked).
    private var reasons: (EvaluationReason, EvaluationReason, EvaluationReason, EvaluationReason) =
        (.default, .default, .default, .default)
    private var more: [Int: (index: Int, reason: EvaluationReason)] = [:]
    /// With the variation's index, in the order decided; empty (no allocation) on the plain
    /// path. A call decides a few carriers: a search along them costs less than hashing.
    private var details: [(position: Int, detail: VariationDetail, variationIndex: Int?)] = []

    /// The detail of the experience at `position`, when this call decided it on the detail path.
    func detail(_ position: Int) -> (detail: VariationDetail, variationIndex: Int?)? {
        guard let found = details.firstIndex(where: { $0.position == position }) else { return nil }
        return (details[found].detail, details[found].variationIndex)
    }

    /// Remembers the detail of the experience at `position`.
    mutating func remember(_ position: Int, _ detail: VariationDetail, _ variationIndex: Int?) {
        details.append((position, detail, variationIndex))
    }

    /// The index of the variation decided for the experience at `position` (`nil`: none) and
    /// its reason, or `nil` when it was not decided yet.
    func variationIndex(_ position: Int) -> (variationIndex: Int?, reason: EvaluationReason)? {
        let index: Int, reason: EvaluationReason
        if positions.0 == position {
            (index, reason) = (indexes.0, reasons.0)
        } else if positions.1 == position {
            (index, reason) = (indexes.1, reasons.1)
        } else if positions.2 == position {
            (index, reason) = (indexes.2, reasons.2)
        } else if positions.3 == position {
            (index, reason) = (indexes.3, reasons.3)
        } else if let found = more[position] {
            (index, reason) = found
        } else {
            return nil
        }
        return (index < 0 ? nil : index, reason)
    }

    /// Remembers the index of the variation decided for the experience at `position`, and why.
    mutating func remember(_ position: Int, _ variationIndex: Int?, _ reason: EvaluationReason) {
        let index = variationIndex ?? -1
        if positions.0 < 0 {
            (positions.0, indexes.0, reasons.0) = (position, index, reason)
        } else if positions.1 < 0 {
            (positions.1, indexes.1, reasons.1) = (position, index, reason)
        } else if positions.2 < 0 {
            (positions.2, indexes.2, reasons.2) = (position, index, reason)
        } else if positions.3 < 0 {
            (positions.3, indexes.3, reasons.3) = (position, index, reason)
        } else {
            more[position] = (index, reason)
        }
    }
}
