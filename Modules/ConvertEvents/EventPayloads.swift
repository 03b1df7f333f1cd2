import ConvertModel
import ConvertVisitor

/// What an ``SystemEvent`` carries; match on the case to read its payload.
///
/// ```swift
/// let token = await sdk.on(.bucketing) { payload in
///     if case let .bucketing(info) = payload { print(info.visitorId, info.variationId) }
/// }
/// ```
public enum EventPayloadValue: Sendable {
    /// The SDK installed its first config and is ready to decide.
    case ready(ReadyPayload)
    /// A fetched config differs from the installed one and replaced it.
    case configUpdated(ConfigUpdatedPayload)
    /// The tracking endpoint acknowledged a batch of events.
    case apiQueueReleased(ApiQueueReleasedPayload)
    /// A visitor was bucketed into a variation for the first time (not for a stored decision).
    case bucketing(BucketingPayload)
    /// A visitor converted a goal (a repeat the SDK deduplicated fires nothing).
    case conversion(ConversionPayload)
    /// A visitor's stored segments changed.
    case segments(SegmentsPayload)
    /// A location's rules began to match a visitor's location properties.
    case locationActivated(LocationActivatedPayload)
    /// A location that matched a visitor stopped matching.
    case locationDeactivated(LocationDeactivatedPayload)
    /// The audiences a visitor matched while an experience was decided.
    case audiences(AudiencesPayload)
    /// The visitor data store wrote its pending changes.
    case dataStoreQueueReleased(DataStoreQueueReleasedPayload)

    /// The event this payload belongs to.
    public var event: SystemEvent {
        switch self {
        case .ready: return .ready
        case .configUpdated: return .configUpdated
        case .apiQueueReleased: return .apiQueueReleased
        case .bucketing: return .bucketing
        case .conversion: return .conversion
        case .segments: return .segments
        case .locationActivated: return .locationActivated
        case .locationDeactivated: return .locationDeactivated
        case .audiences: return .audiences
        case .dataStoreQueueReleased: return .dataStoreQueueReleased
        }
    }
}

/// The first config is installed.
public struct ReadyPayload: Sendable, Hashable {
    /// An empty payload: the event itself is the news.
    package init() {}
}

/// A changed config replaced the previous one.
public struct ConfigUpdatedPayload: Sendable {
    /// The new config.
    public let snapshot: ProjectConfig?
    /// What changed from the previous config: entities added, removed and changed by kind (the
    /// JavaScript SDK's `config.updated` carries nothing). Empty when only fields the SDK does
    /// not read changed.
    public let changes: ConfigChanges

    /// A payload for the new config and what changed (nothing listed unless given).
    package init(snapshot: ProjectConfig?, changes: ConfigChanges = ConfigChanges()) {
        self.snapshot = snapshot
        self.changes = changes
    }
}

/// A tracking batch was accepted by the server.
public struct ApiQueueReleasedPayload: Sendable, Hashable {
    /// How many events the acknowledged request carried.
    public let eventCount: Int

    /// A payload for a batch of `eventCount` events.
    package init(eventCount: Int) { self.eventCount = eventCount }
}

/// A visitor got a new decision.
public struct BucketingPayload: Sendable, Hashable {
    /// The visitor who was bucketed.
    public let visitorId: String
    /// The experience's id in the config.
    public let experienceId: String
    /// The experience's key in the config.
    public let experienceKey: String
    /// The id of the variation the visitor got.
    public let variationId: String
    /// The variation's key; `nil` when the config gives the variation none.
    public let variationKey: String?

    /// A payload for one new decision.
    package init(visitorId: String, experienceId: String, experienceKey: String, variationId: String, variationKey: String?) {
        self.visitorId = visitorId
        self.experienceId = experienceId
        self.experienceKey = experienceKey
        self.variationId = variationId
        self.variationKey = variationKey
    }
}

/// A conversion was queued for tracking.
public struct ConversionPayload: Sendable, Hashable {
    /// The visitor who converted.
    public let visitorId: String
    /// The goal's id in the config.
    public let goalId: String
    /// The goal's key, as passed to `trackConversion`.
    public let goalKey: String

    /// A payload for one queued conversion.
    package init(visitorId: String, goalId: String, goalKey: String) {
        self.visitorId = visitorId
        self.goalId = goalId
        self.goalKey = goalKey
    }
}

/// A visitor's segments changed.
public struct SegmentsPayload: Sendable, Hashable {
    /// The visitor whose segments changed.
    public let visitorId: String
    /// The segments as stored after the change.
    public let segments: VisitorSegments

    /// A payload for one visitor's new segments.
    package init(visitorId: String, segments: VisitorSegments) {
        self.visitorId = visitorId
        self.segments = segments
    }
}

/// A location's rules started matching for a visitor.
public struct LocationActivatedPayload: Sendable, Hashable {
    /// The visitor whose location properties matched.
    public let visitorId: String
    /// The location's id in the config.
    public let locationId: String
    /// The location's key; `nil` when the config gives it none.
    public let locationKey: String?
    /// The location properties that matched.
    public let properties: [String: String]

    /// A payload for one location that began to match.
    package init(visitorId: String, locationId: String, locationKey: String?, properties: [String: String]) {
        self.visitorId = visitorId
        self.locationId = locationId
        self.locationKey = locationKey
        self.properties = properties
    }
}

/// A location's rules stopped matching for a visitor.
public struct LocationDeactivatedPayload: Sendable, Hashable {
    /// The visitor whose location properties no longer match.
    public let visitorId: String
    /// The location's id in the config.
    public let locationId: String
    /// The location's key; `nil` when the config gives it none.
    public let locationKey: String?

    /// A payload for one location that stopped matching.
    package init(visitorId: String, locationId: String, locationKey: String?) {
        self.visitorId = visitorId
        self.locationId = locationId
        self.locationKey = locationKey
    }
}

/// The audiences a visitor matched while an experience was decided.
public struct AudiencesPayload: Sendable, Hashable {
    /// The visitor whose audiences were evaluated.
    public let visitorId: String
    /// The ids of the audiences that matched, in config order.
    public let audienceIds: [String]

    /// A payload for one visitor's matched audiences.
    package init(visitorId: String, audienceIds: [String]) {
        self.visitorId = visitorId
        self.audienceIds = audienceIds
    }
}

/// The visitor data store wrote its pending changes.
public struct DataStoreQueueReleasedPayload: Sendable, Hashable {
    /// How many visitor records were written.
    public let recordCount: Int

    /// A payload for `recordCount` written visitor records (0 when the store does not count them).
    package init(recordCount: Int = 0) { self.recordCount = recordCount }
}
