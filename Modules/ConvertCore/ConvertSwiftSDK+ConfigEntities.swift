import ConvertModel

extension ConvertSwiftSDK {
    /// The entity of `kind` with this key in the installed config, `nil` before readiness or
    /// when there is none. The JavaScript SDK's `getConfigEntity(key, entityType)`.
    ///
    /// ```swift
    /// if let experience = sdk.configEntity(.experience, key: "pricing-test") { print(experience.variations.count) }
    /// let variation = sdk.configEntity(.variation, id: "100299457")   // Variation?, from any experience
    /// ```
    public func configEntity<Entity>(_ kind: ConfigEntityKind<Entity>, key: String) -> Entity? {
        runtime.current?.config.entity(kind, key: key)
    }

    /// The entity of `kind` with this id in the installed config, `nil` before readiness or
    /// when there is none. The JavaScript SDK's `getConfigEntityById(id, entityType)`.
    public func configEntity<Entity>(_ kind: ConfigEntityKind<Entity>, id: String) -> Entity? {
        runtime.current?.config.entity(kind, id: id)
    }
}
