import ConvertModel
import ConvertRules
import ConvertSupport

extension ConvertContext {
    /// The feature with `key` for this visitor: enabled with its variables when an experience
    /// carrying it gives the visitor a variation that switches it on, disabled otherwise.
    ///
    /// Experiences are decided as ``runExperience(_:enableTracking:)`` would (so new
    /// decisions are stored and tracked), in config order; the first that carries the feature wins.
    public func runFeature(_ key: String, typeCasting: Bool = true, enableTracking: Bool = true) async -> BucketedFeature {
        guard let installed = installedConfig(for: "runFeature") else {
            return .disabled(key: key, feature: nil)
        }
        guard let feature = installed.config.feature(key: key) else {
            core.log.warn("no feature has the key \"\(key)\"")
            return .disabled(key: key, feature: nil)
        }
        let snapshot = self.snapshot
        var decided = [BucketedVariation??](repeating: nil, count: installed.config.experiences.count)
        return resolve(feature, installed, snapshot, typeCasting: typeCasting, enableTracking: enableTracking, decided: &decided)
    }

    /// Every declared feature, enabled or disabled, in config order.
    public func runFeatures(typeCasting: Bool = true, enableTracking: Bool = true) async -> [BucketedFeature] {
        guard let installed = installedConfig(for: "runFeatures") else { return [] }
        let snapshot = self.snapshot
        var decided = [BucketedVariation??](repeating: nil, count: installed.config.experiences.count)
        return installed.config.features.map {
            resolve($0, installed, snapshot, typeCasting: typeCasting, enableTracking: enableTracking, decided: &decided)
        }
    }

    /// Explains, experience by experience, how the feature with `key` would be resolved, without
    /// storing, tracking or announcing anything.
    public func explainFeature(_ key: String) async -> [DecisionTrace] {
        guard let installed = core.current, let feature = installed.config.feature(key: key) else { return [] }
        var traces: [DecisionTrace] = []
        for experience in installed.config.experiencesCarrying(featureId: feature.id) {
            traces.append(await explainExperience(experience.key))
        }
        return traces
    }

    private func resolve(_ feature: Feature, _ installed: InstalledConfig, _ snapshot: Snapshot, typeCasting: Bool,
                         enableTracking: Bool, decided: inout [BucketedVariation??]) -> BucketedFeature {
        for index in installed.config.carrierIndexes(featureId: feature.id) {
            let experience = installed.config.experiences[index]
            let variation: BucketedVariation?
            if let cached = decided[index] {
                variation = cached
            } else {
                variation = decide(position: index, installed, snapshot, enableTracking: enableTracking)
                decided[index] = .some(variation)
            }
            guard let variation, let change = variation.variation.featureChange(featureId: feature.id) else { continue }
            return BucketedFeature(key: feature.key, id: feature.id, name: feature.name, status: .enabled,
                                   experienceId: experience.id, experienceKey: experience.key,
                                   variationId: variation.id, variationKey: variation.key,
                                   variables: typeCasting ? cast(change.variables, feature) : change.variables)
        }
        return .disabled(key: feature.key, feature: feature)
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
