import ConvertModel

/// How a new config changed one experience or feature (see ``ConvertSwiftSDK/changes(forKey:bufferingNewest:)``).
public struct ConfigChange: Sendable, Hashable, CustomStringConvertible {
    /// The kind of entity that changed.
    public enum Kind: String, Sendable, Hashable {
        /// An experience.
        case experience
        /// A feature.
        case feature
    }

    /// What happened to it.
    public enum Change: String, Sendable, Hashable {
        /// The new config has it, the old one did not.
        case added
        /// The old config had it, the new one does not.
        case removed
        /// Both have it and it differs: for an experience its own fields, variations or traffic
        /// allocation, or its archiving; for a feature its declared variables, or an experience
        /// carrying it (its variables' values, its allocation) was added, removed or changed.
        case changed
    }

    /// Whether an experience or a feature changed.
    public let kind: Kind
    /// Its key.
    public let key: String
    /// Its id.
    public let id: String
    /// Added, removed or changed.
    public let change: Change

    /// A change of the entity of this kind, key and id.
    package init(kind: Kind, key: String, id: String, change: Change) {
        self.kind = kind
        self.key = key
        self.id = id
        self.change = change
    }

    /// E.g. `feature new-checkout changed`.
    public var description: String { "\(kind.rawValue) \(key) \(change.rawValue)" }

    /// The changes `installed` made to the experience and the feature with `key` (either may be absent).
    static func changes(forKey key: String, in installed: InstalledChange) -> [ConfigChange] {
        guard let changes = installed.changes, let previous = installed.previous else { return [] }
        var found: [ConfigChange] = []
        if let change = entityChange(key, changes.experiences) ?? (changes.archivedExperiences.affects(key: key) ? .changed : nil),
           let id = installed.next.experience(key: key)?.id ?? previous.experience(key: key)?.id {
            found.append(ConfigChange(kind: .experience, key: key, id: id, change: change))
        }
        if let feature = installed.next.feature(key: key) ?? previous.feature(key: key) {
            var change = entityChange(key, changes.features)
            if change == nil, carriersChanged(featureId: feature.id, changes, previous, installed.next) { change = .changed }
            if let change { found.append(ConfigChange(kind: .feature, key: key, id: feature.id, change: change)) }
        }
        return found
    }

    private static func entityChange(_ key: String, _ changes: ConfigChanges.EntityChanges) -> Change? {
        if changes.added.contains(where: { $0.key == key }) { return .added }
        if changes.removed.contains(where: { $0.key == key }) { return .removed }
        if changes.changed.contains(where: { $0.key == key }) { return .changed }
        return nil
    }

    /// Whether an experience whose variations carry the feature (in either config) was added,
    /// removed, changed, archived or unarchived.
    private static func carriersChanged(featureId: String, _ changes: ConfigChanges, _ old: ProjectConfig,
                                        _ new: ProjectConfig) -> Bool {
        let touched = changes.experiences.added + changes.experiences.removed + changes.experiences.changed
            + changes.archivedExperiences.added + changes.archivedExperiences.removed
        return touched.contains { reference in
            [old.experience(id: reference.id), new.experience(id: reference.id)].contains { experience in
                experience?.variations.contains { $0.featureChange(featureId: featureId) != nil } ?? false
            }
        }
    }
}

extension ConvertSwiftSDK {
    /// The changes each new config makes to the experience or feature with `key`: added,
    /// removed, or changed (allocation, variations, variables, or an experience carrying the
    /// feature). Each `config.updated` that touches the key yields one change per kind it
    /// touches (an experience and a feature may share a key). Past `bufferingNewest`
    /// undelivered changes the oldest are dropped.
    ///
    /// The stream finishes when the SDK shuts down; stopping the iteration (or cancelling its
    /// task) ends the subscription.
    ///
    /// ```swift
    /// for await change in sdk.changes(forKey: "new-checkout") { print(change) }   // "feature new-checkout changed"
    /// ```
    public func changes(forKey key: String, bufferingNewest limit: Int = 64) -> AsyncStream<ConfigChange> {
        let watchers = runtime.watchers
        let (stream, continuation) = AsyncStream<ConfigChange>.makeStream(bufferingPolicy: .bufferingNewest(max(1, limit)))
        let id = watchers.add(changed: { installed in
            for change in ConfigChange.changes(forKey: key, in: installed) { continuation.yield(change) }
        }, finish: { continuation.finish() })
        if let id { continuation.onTermination = { _ in watchers.remove(id) } }
        return stream
    }

    /// How many change streams (per key and per visitor) are following configs now.
    package var changeStreamCount: Int { runtime.watchers.count }
}
