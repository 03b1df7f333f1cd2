import ConvertModel

/// The variation a visitor sees in an experience.
public struct BucketedVariation: Sendable, Hashable {
    /// The experience decided.
    public let experience: Experience
    /// The experience's id.
    public var experienceId: String { experience.id }
    /// The experience's key.
    public var experienceKey: String { experience.key }
    /// The experience's name.
    public var experienceName: String? { experience.name }
    /// The variation itself: id, key, name, changes.
    public let variation: Variation
    /// Whether this came from the visitor's stored decision rather than fresh bucketing.
    public let isStored: Bool
    /// Whether a preview forced it.
    public let isPreview: Bool
    /// Whether a QA override forced it (``DecisionOverrides``).
    public private(set) var isForced = false

    /// The variation's id.
    public var id: String { variation.id }
    /// The variation's key, as the config gives it (`nil` when it gives none).
    public var key: String? { variation.key }
    /// The variation's key, or its id when the config gives no key: always something to show,
    /// log or compare, the way the SDK's own tables and tracking name a variation.
    public var keyOrId: String { variation.keyOrId }
    /// The variation's name.
    public var name: String? { variation.name }
    /// The changes the variation applies.
    public var changes: [VariationChange] { variation.changes }

    package init(experience: Experience, variation: Variation, isStored: Bool, isPreview: Bool, isForced: Bool = false) {
        self.experience = experience
        self.variation = variation
        self.isStored = isStored
        self.isPreview = isPreview
        self.isForced = isForced
    }
}

/// What a conversion call did.
public enum ConversionResult: Sendable, Hashable {
    /// Events were queued (`eventCount` of them: the conversion, and the transaction when goal data came).
    case tracked(eventCount: Int)
    /// The tracking queue refused `eventCount` of the events (full, the SDK shut down, or an
    /// event too large to send); they will never be sent. The conversion is still recorded for dedup.
    case dropped(eventCount: Int)
    /// The visitor already converted on this goal and nothing new was to be sent.
    case duplicate
    /// No goal has this key.
    case unknownGoal
    /// The rule data did not match the goal's rules.
    case rulesNotMatched
    /// Goal data was rejected (a non-finite amount, a value of the wrong type); nothing was tracked.
    case invalidGoalData(String)
    /// Tracking is off; the conversion was recorded for dedup but not sent.
    case trackingDisabled
    /// The context previews a variation, so nothing is recorded or sent.
    case previewing
    /// The visitor has not consented (``ConvertContext/consent``): nothing is recorded or sent.
    case noConsent
    /// No config is installed yet.
    case notReady
    /// The context's visitor id is empty or too long (see ``ConvertContext/visitorIdProblem``).
    case invalidVisitorId
}
