/// A kind of config entity, typed by what a lookup returns: `.experience` finds an
/// ``Experience``, `.goal` a ``Goal``, and so on.
///
/// The JavaScript SDK's `EntityType` (`getConfigEntity(key, EntityType.GOAL)`); ``name`` is its
/// string value.
///
/// ```swift
/// let goal = config.entity(.goal, key: "button-primary-click")          // Goal?
/// let variation = config.entity(.variation, id: "100299457")            // Variation?
/// ```
public struct ConfigEntityKind<Entity: Sendable>: Sendable {
    /// The JavaScript SDK's name of the kind: `experience`, `variation`, `feature`, `audience`,
    /// `segment`, `location`, `goal`.
    public let name: String
    private let byKey: @Sendable (ProjectConfig, String) -> Entity?
    private let byId: @Sendable (ProjectConfig, String) -> Entity?

    private init(name: String, byKey: @escaping @Sendable (ProjectConfig, String) -> Entity?,
                 byId: @escaping @Sendable (ProjectConfig, String) -> Entity?) {
        self.name = name
        self.byKey = byKey
        self.byId = byId
    }

    fileprivate func find(_ config: ProjectConfig, key: String) -> Entity? { byKey(config, key) }
    fileprivate func find(_ config: ProjectConfig, id: String) -> Entity? { byId(config, id) }
}

extension ConfigEntityKind where Entity == Experience {
    /// Experiences, archived ones included.
    public static var experience: Self {
        Self(name: "experience", byKey: { $0.experience(key: $1) }, byId: { $0.experience(id: $1) })
    }
}

extension ConfigEntityKind where Entity == Variation {
    /// Variations of every experience: the first experience (config order) having one with the
    /// key or id gives it, as the JavaScript SDK looks them up.
    public static var variation: Self {
        Self(name: "variation",
             byKey: { config, key in config.experiences.lazy.compactMap { $0.variation(key: key) }.first },
             byId: { config, id in config.experiences.lazy.compactMap { $0.variation(id: id) }.first })
    }
}

extension ConfigEntityKind where Entity == Feature {
    /// Features.
    public static var feature: Self {
        Self(name: "feature", byKey: { $0.feature(key: $1) }, byId: { $0.feature(id: $1) })
    }
}

extension ConfigEntityKind where Entity == Audience {
    /// Audiences (a key lookup finds the first audience with that key).
    public static var audience: Self {
        Self(name: "audience", byKey: { config, key in config.audiences.first { $0.key == key } },
             byId: { $0.audience(id: $1) })
    }
}

extension ConfigEntityKind where Entity == Segment {
    /// Segments.
    public static var segment: Self {
        Self(name: "segment", byKey: { $0.segment(key: $1) }, byId: { $0.segment(id: $1) })
    }
}

extension ConfigEntityKind where Entity == Location {
    /// Locations (a key lookup finds the first location with that key).
    public static var location: Self {
        Self(name: "location", byKey: { config, key in config.locations.first { $0.key == key } },
             byId: { $0.location(id: $1) })
    }
}

extension ConfigEntityKind where Entity == Goal {
    /// Goals.
    public static var goal: Self {
        Self(name: "goal", byKey: { $0.goal(key: $1) }, byId: { $0.goal(id: $1) })
    }
}

extension ProjectConfig {
    /// The entity of `kind` with this key, `nil` when there is none (the JavaScript SDK's
    /// `getConfigEntity(key, entityType)`).
    public func entity<Entity>(_ kind: ConfigEntityKind<Entity>, key: String) -> Entity? {
        kind.find(self, key: key)
    }

    /// The entity of `kind` with this id, `nil` when there is none (the JavaScript SDK's
    /// `getConfigEntityById(id, entityType)`).
    public func entity<Entity>(_ kind: ConfigEntityKind<Entity>, id: String) -> Entity? {
        kind.find(self, id: id)
    }
}
