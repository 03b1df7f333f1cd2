import ConvertModel
import ConvertRules
import ConvertSynchronization
import Foundation

extension ConvertContext {
    /// Decides every experience and feature for this visitor, as ``variations(exposure:)`` and
    /// ``features(typeCasting:exposure:)`` do (storing, tracking and announcing the same), and
    /// returns the decisions as a ``DecisionSnapshot`` for a client to render.
    ///
    /// An SDK made from the snapshot sends its own bucketing events when the client decides
    /// (``ConvertSwiftSDK/init(snapshot:configuration:ports:)``); take the snapshot with
    /// ``Exposure/none`` then, so each decision is tracked once, by the client.
    ///
    /// ```swift
    /// guard let snapshot = context.snapshot(exposure: .none) else { return }
    /// response.body = try snapshot.jsonData()
    /// ```
    ///
    /// - Returns: `nil` when no config is installed yet or the visitor id is unusable.
    public func snapshot(exposure: Exposure = .automatic) -> DecisionSnapshot? {
        guard visitorIdProblem == nil else { return nil }
        // The two calls each read the installed config; a config installed between them would
        // mix two configs in one snapshot, so that (rare) case is taken again.
        for attempt in 0..<3 {
            guard let installed = runtime.current else { return nil }
            let variations = variations(exposure: exposure)
            let features = features(exposure: exposure)
            if runtime.current === installed || attempt == 2 {
                return snapshot(of: installed, variations, features, exposure: exposure)
            }
        }
        return nil
    }

    private func snapshot(of installed: InstalledConfig, _ variations: [BucketedVariation],
                          _ features: [BucketedFeature], exposure: Exposure) -> DecisionSnapshot {
        let tracking = exposure == .automatic && runtime.isTrackingEnabled && consent == .granted && !isPreviewing
        let experiences = variations.map { decided in
            DecisionSnapshot.DecidedExperience(
                experienceId: decided.experienceId, experienceKey: decided.experienceKey, variationId: decided.id,
                variationKey: decided.key, isTracked: tracking && !decided.isForced && !decided.isPreview,
                changes: decided.changes.map {
                    DecisionSnapshot.Change(id: $0.id, type: $0.type, featureId: $0.featureId, variables: $0.variables)
                })
        }
        let decidedFeatures = features.map { feature in
            DecisionSnapshot.DecidedFeature(
                key: feature.key, id: feature.id ?? "", name: feature.name, status: feature.status, experienceId: feature.experienceId,
                experienceKey: feature.experienceKey, variationId: feature.variationId,
                variationKey: feature.variationKey, variables: feature.isEnabled ? feature.variables : [:])
        }
        return DecisionSnapshot(visitorId: visitorId, accountId: installed.config.accountId,
                                projectId: installed.config.project.id, configRevision: ConfigRevision.of(installed),
                                takenAt: Date(), experiences: experiences, features: decidedFeatures,
                                goals: installed.config.goals.map { DecisionSnapshot.SnapshotGoal(id: $0.id, key: $0.key) })
    }
}

/// A config's revision: a 64-bit FNV-1a fingerprint of its document (the config inside a
/// `{"environment", "data"}` wrapper) written with sorted keys, without the serving timestamp
/// `_s_t`; the same as `convert generate` writes.
package enum ConfigRevision {
    /// The revisions of the last few installed configs, so a snapshot parses its config once,
    /// not per call. Entries hold their config: a weak reference would make every retain of a
    /// config on the decision path slower.
    private static let recent = Locked<[(config: InstalledConfig, revision: String)]>([])
    private static let remembered = 4

    static func of(_ installed: InstalledConfig) -> String {
        if let known = recent.withValue({ entries in entries.first { $0.config === installed }?.revision }) {
            return known
        }
        let revision = of(bytes: installed.bytes)
        recent.withValue { entries in
            entries.removeAll { $0.config === installed }
            entries.insert((installed, revision), at: 0)
            if entries.count > remembered { entries.removeLast(entries.count - remembered) }
        }
        return revision
    }

    /// The revision of config bytes; of the bytes themselves when they are not JSON.
    package static func of(bytes: Data) -> String {
        guard let document = try? JSONParser.parse(bytes) else { return fnv1a(bytes) }
        return of(document: document)
    }

    /// The revision of a config document (or of one inside a `{"environment", "data"}` wrapper).
    package static func of(document: JSONValue) -> String {
        var document = document
        if case .object(let top) = document, top["account_id"] == nil, let data = top["data"], case .object = data {
            document = data
        }
        if case .object(var members) = document {
            members["_s_t"] = nil
            document = .object(members)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return fnv1a((try? encoder.encode(document)) ?? Data("null".utf8))
    }

    private static func fnv1a(_ bytes: Data) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
