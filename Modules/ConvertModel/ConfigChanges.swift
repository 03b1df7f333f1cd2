/// What differs between two configs, entity kind by entity kind: which entities were added,
/// removed or changed, and whether the project itself changed.
///
/// Entities are matched by id; an entity is changed when any field the SDK reads differs
/// (a variation's change shows under ``variations`` and under its experience). The
/// `config.updated` system event carries one (`ConfigUpdatedPayload.changes`); it is empty
/// when only fields the SDK does not read changed.
///
/// ```swift
/// let changes = ConfigChanges(from: old, to: new)
/// if changes.experiences.affects(key: "pricing-test") { … }
/// ```
public struct ConfigChanges: Sendable, Hashable, CustomStringConvertible {
    /// One kind's changes. Added and changed entities are listed in the new config's order,
    /// removed ones in the old config's.
    public struct EntityChanges: Sendable, Hashable {
        /// Entities whose id is new.
        public var added: [ConfigEntityReference]
        /// Entities whose id is gone.
        public var removed: [ConfigEntityReference]
        /// Entities present in both whose content differs.
        public var changed: [ConfigEntityReference]

        /// No entity of this kind was added, removed or changed.
        public var isEmpty: Bool { added.isEmpty && removed.isEmpty && changed.isEmpty }

        /// Whether the entity with this key was added, removed or changed.
        public func affects(key: String) -> Bool {
            (added + removed + changed).contains { $0.key == key }
        }

        /// Whether the entity with this id was added, removed or changed.
        public func affects(id: String) -> Bool {
            (added + removed + changed).contains { $0.id == id }
        }

        /// Changes with these lists (none by default).
        package init(added: [ConfigEntityReference] = [], removed: [ConfigEntityReference] = [],
                    changed: [ConfigEntityReference] = []) {
            self.added = added
            self.removed = removed
            self.changed = changed
        }
    }

    /// Experiences (an experience's own fields and its variations).
    public var experiences = EntityChanges()
    /// Variations of every experience, matched by experience and variation id.
    public var variations = EntityChanges()
    /// Features and their declared variables.
    public var features = EntityChanges()
    /// Audiences.
    public var audiences = EntityChanges()
    /// Segments.
    public var segments = EntityChanges()
    /// Locations.
    public var locations = EntityChanges()
    /// Goals.
    public var goals = EntityChanges()
    /// Experiences that `archived_experiences` gained (`added`) or lost (`removed`); named by id,
    /// with the key when the new (for `removed`, the old) config has the experience.
    public var archivedExperiences = EntityChanges()
    /// Whether `account_id` or the project (id, name, type, UTC offset, settings) changed.
    public var projectChanged = false

    /// Nothing changed.
    package init() {}

    /// The changes that turn `old` into `new`.
    package init(from old: ProjectConfig, to new: ProjectConfig) {
        experiences = Self.compare(old.experiences, new.experiences, id: \.id, key: { $0.key }, same: Self.sameContent)
        variations = Self.compare(Self.variations(of: old), Self.variations(of: new), id: \.id, key: \.key, same: { $0.content == $1.content })
        features = Self.compare(old.features, new.features, id: \.id, key: { $0.key }, same: ==)
        audiences = Self.compare(old.audiences, new.audiences, id: \.id, key: \.key, same: ==)
        segments = Self.compare(old.segments, new.segments, id: \.id, key: \.key, same: ==)
        locations = Self.compare(old.locations, new.locations, id: \.id, key: \.key, same: ==)
        goals = Self.compare(old.goals, new.goals, id: \.id, key: { $0.key }, same: ==)
        let wasArchived = old.archivedExperienceIds, isArchived = new.archivedExperienceIds
        archivedExperiences = EntityChanges(
            added: isArchived.subtracting(wasArchived).sorted().map { ConfigEntityReference(id: $0, key: new.experience(id: $0)?.key) },
            removed: wasArchived.subtracting(isArchived).sorted().map { ConfigEntityReference(id: $0, key: old.experience(id: $0)?.key) })
        projectChanged = old.accountId != new.accountId || old.project != new.project
    }

    /// Nothing was added, removed or changed, and the project is the same.
    public var isEmpty: Bool {
        !projectChanged && [experiences, variations, features, audiences, segments, locations, goals, archivedExperiences]
            .allSatisfy(\.isEmpty)
    }

    /// A one-line summary, e.g. `experiences +1 ~2, goals -1` (`+` added, `-` removed, `~` changed).
    public var description: String {
        let kinds = [("experiences", experiences), ("variations", variations), ("features", features),
                     ("audiences", audiences), ("segments", segments), ("locations", locations), ("goals", goals)]
        var parts = kinds.compactMap { name, changes -> String? in
            guard !changes.isEmpty else { return nil }
            let counts = [("+", changes.added.count), ("-", changes.removed.count), ("~", changes.changed.count)]
            return name + " " + counts.filter { $0.1 > 0 }.map { "\($0.0)\($0.1)" }.joined(separator: " ")
        }
        if !archivedExperiences.added.isEmpty { parts.append("archived \(archivedExperiences.added.count)") }
        if !archivedExperiences.removed.isEmpty { parts.append("unarchived \(archivedExperiences.removed.count)") }
        if projectChanged { parts.append("project") }
        return parts.isEmpty ? "no changes the SDK reads" : parts.joined(separator: ", ")
    }

    /// A variation with the experience it belongs to, so that moving it counts as a change.
    private struct PlacedVariation {
        let experienceId: String
        let variation: Variation
        var id: String { variation.id }
        var key: String? { variation.key }
        var content: PlacedContent { PlacedContent(experienceId: experienceId, variation: variation) }
    }

    private struct PlacedContent: Equatable {
        let experienceId: String
        let variation: Variation
    }

    private static func variations(of config: ProjectConfig) -> [PlacedVariation] {
        config.experiences.flatMap { experience in
            experience.variations.map { PlacedVariation(experienceId: experience.id, variation: $0) }
        }
    }

    /// Experience equality without the positions of resolved references, which shift when an
    /// unrelated audience or location is added before them.
    private static func sameContent(_ a: Experience, _ b: Experience) -> Bool {
        a.id == b.id && a.key == b.key && a.name == b.name && a.type == b.type && a.status == b.status
            && a.version?.bitPattern == b.version?.bitPattern && a.environment == b.environment
            && a.environments == b.environments && a.locationIds == b.locationIds && a.siteArea == b.siteArea
            && a.audienceIds == b.audienceIds && a.goalIds == b.goalIds && a.audienceMatching == b.audienceMatching
            && a.locationMatching == b.locationMatching && a.variations == b.variations && a.segmentIds == b.segmentIds
    }

    /// Compares two lists by id; the first entity with an id stands for it, as lookups do.
    private static func compare<T>(_ old: [T], _ new: [T], id: (T) -> String, key: (T) -> String?,
                                   same: (T, T) -> Bool) -> EntityChanges {
        var oldById: [String: T] = [:]
        for entity in old where oldById[id(entity)] == nil { oldById[id(entity)] = entity }
        var changes = EntityChanges()
        var seen = Set<String>()
        for entity in new where seen.insert(id(entity)).inserted {
            let reference = ConfigEntityReference(id: id(entity), key: key(entity))
            if let before = oldById[id(entity)] {
                if !same(before, entity) { changes.changed.append(reference) }
            } else {
                changes.added.append(reference)
            }
        }
        var removedSeen = Set<String>()
        for entity in old where !seen.contains(id(entity)) && removedSeen.insert(id(entity)).inserted {
            changes.removed.append(ConfigEntityReference(id: id(entity), key: key(entity)))
        }
        return changes
    }
}

/// An entity named in ``ConfigChanges``: its id, and its key when it has one.
public struct ConfigEntityReference: Sendable, Hashable, CustomStringConvertible {
    /// The entity's id.
    public let id: String
    /// The entity's key (`nil` for an entity without one).
    public let key: String?

    /// A reference to the entity with this id and key.
    package init(id: String, key: String?) {
        self.id = id
        self.key = key
    }

    /// The key when there is one, else the id.
    public var description: String { key ?? id }
}
