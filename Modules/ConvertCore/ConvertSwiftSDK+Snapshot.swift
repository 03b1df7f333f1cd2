import ConvertModel
import ConvertRules
import Foundation

extension ConvertSwiftSDK {
    /// Starts an SDK that answers from `snapshot` alone: it fetches no config (the ports' config
    /// source is never run) and is ready as soon as its visitor store is, with no network.
    ///
    /// The SDK runs on a config made from the snapshot: each experience holds only the
    /// snapshot's variation, at 100 % of the traffic and with no audiences or locations, so
    /// `variation(forExperience:)` gives it; features are carried by those variations with the
    /// snapshot's variables, and the features the snapshot has disabled stay disabled. Decisions
    /// are stored and tracked as usual: the first decision of an experience sends its bucketing
    /// event (the same experience and variation ids) to the snapshot's account and project.
    ///
    /// The SDK serves the snapshot's visitor. Contexts for other visitor ids get the same
    /// answers, tracked under their own ids. Conversions are tracked on the snapshot's goals;
    /// their rules are not in a snapshot, so a conversion with rule data matches nothing here
    /// (track those where the snapshot was taken).
    ///
    /// ```swift
    /// let snapshot = try DecisionSnapshot(jsonData: body)
    /// let sdk = ConvertSwiftSDK(snapshot: snapshot, configuration: configuration, ports: ports)
    /// try await sdk.ready()
    /// let variation = sdk.createContext(visitorId: snapshot.visitorId).variation(forExperience: "checkout-test")
    /// ```
    public convenience init(snapshot: DecisionSnapshot, configuration: ConvertConfiguration, ports: ConvertPorts) {
        var ports = ports
        ports.configSource = DirectConfigSource(bytes: snapshot.configData())
        self.init(configuration: configuration, ports: ports)
        // A feature forced on where the snapshot was taken has no variation to carry it here;
        // a forced decision is never tracked there or here.
        let uncarried = snapshot.features.filter { $0.isEnabled && snapshot.carrier(of: $0) == nil }
        if !uncarried.isEmpty {
            var overrides = self.overrides
            for feature in uncarried { overrides.forceFeature(feature.key, enabled: true, variables: feature.variables) }
            setOverrides(overrides)
        }
    }
}

extension ConvertSwiftSDK {
    /// The object holding the installed config and what decisions need beside it, for tests
    /// that watch when a config is freed.
    package var installedConfigObject: AnyObject? { runtime.current }
}

extension DecisionSnapshot {
    /// The experience in the snapshot whose variation switched `feature` on, if any.
    func carrier(of feature: DecidedFeature) -> DecidedExperience? {
        guard feature.isEnabled, let experienceId = feature.experienceId, let variationId = feature.variationId else {
            return nil
        }
        return experiences.first { $0.experienceId == experienceId && $0.variationId == variationId }
    }

    /// The config an SDK made from the snapshot runs on (see
    /// ``ConvertSwiftSDK/init(snapshot:configuration:ports:)``), as config JSON.
    package func configData() -> Data {
        var carried: [String: [DecidedFeature]] = [:]  // by "experienceId.variationId"
        for feature in features {
            if let carrier = carrier(of: feature) {
                carried[carrier.experienceId + "." + carrier.variationId, default: []].append(feature)
            }
        }
        let experiences = experiences.map { experience -> JSONValue in
            var features = carried[experience.experienceId + "." + experience.variationId] ?? []
            var changes: [JSONValue] = []
            for change in experience.changes {
                guard change.type == VariationChange.featureChangeType else {
                    changes.append(Self.change(id: change.id, type: change.type, data: nil))
                    continue
                }
                // Only the change that gives the visitor its feature is kept, with the variables
                // the visitor got: the others would switch on here what is off there.
                guard let index = features.firstIndex(where: { $0.id == change.featureId }) else { continue }
                changes.append(Self.featureChange(id: change.id, features.remove(at: index)))
            }
            changes += features.map { Self.featureChange(id: nil, $0) }
            var variation: [String: JSONValue] = ["id": .string(experience.variationId), "status": "running",
                                                  "traffic_allocation": 100, "changes": .array(changes)]
            if let key = experience.variationKey { variation["key"] = .string(key) }
            return ["id": .string(experience.experienceId), "key": .string(experience.experienceKey), "status": "active",
                    "audiences": [], "locations": [], "goals": [], "variations": [.object(variation)]]
        }
        let declared = features.map { feature -> JSONValue in
            // Declared by the kind of the value the visitor got: casting it again changes nothing.
            let variables = feature.variables.keys.sorted().map { key -> JSONValue in
                ["key": .string(key), "type": .string(Self.variableType(feature.variables[key] ?? .null))]
            }
            var out: [String: JSONValue] = ["id": .string(feature.id), "key": .string(feature.key),
                                            "variables": .array(variables)]
            if let name = feature.name { out["name"] = .string(name) }
            return .object(out)
        }
        let config: JSONValue = [
            "account_id": .string(accountId), "project": ["id": .string(projectId)],
            "experiences": .array(experiences), "features": .array(declared),
            "audiences": [], "segments": [], "locations": [], "archived_experiences": [],
            "goals": .array(goals.map { ["id": .string($0.id), "key": .string($0.key)] }),
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(config)) ?? Data()
    }

    private static func change(id: String?, type: String?, data: JSONValue?) -> JSONValue {
        var out: [String: JSONValue] = [:]
        if let id { out["id"] = .string(id) }
        if let type { out["type"] = .string(type) }
        if let data { out["data"] = data }
        return .object(out)
    }

    private static func featureChange(id: String?, _ feature: DecidedFeature) -> JSONValue {
        change(id: id, type: VariationChange.featureChangeType,
               data: ["feature_id": .string(feature.id), "variables_data": .object(feature.variables)])
    }

    /// The declared type under which a value casts to itself.
    private static func variableType(_ value: JSONValue) -> String {
        switch value {
        case .bool: return "boolean"
        case .number: return "float"
        case .string: return "string"
        case .null, .array, .object: return "json"
        }
    }
}
