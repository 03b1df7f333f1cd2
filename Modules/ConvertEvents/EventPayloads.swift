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
    case ready(ReadyPayload)
    case configUpdated(ConfigUpdatedPayload)
    case apiQueueReleased(ApiQueueReleasedPayload)
    case bucketing(BucketingPayload)
    case conversion(ConversionPayload)
    case segments(SegmentsPayload)
    case locationActivated(LocationActivatedPayload)
    case locationDeactivated(LocationDeactivatedPayload)
    case audiences(AudiencesPayload)
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
    public init() {}
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
    public init(snapshot: ProjectConfig?, changes: ConfigChanges = ConfigChanges()) {
        self.snapshot = snapshot
        self.changes = changes
    }
}

/// A tracking batch was accepted by the server.
public struct ApiQueueReleasedPayload: Sendable, Hashable {
    public let eventCount: Int

    public init(eventCount: Int) { self.eventCount = eventCount }
}

/// A visitor got a new decision.
public struct BucketingPayload: Sendable, Hashable {
    public let visitorId: String
    public let experienceId: String
    public let experienceKey: String
    public let variationId: String
    public let variationKey: String?

    public init(visitorId: String, experienceId: String, experienceKey: String, variationId: String, variationKey: String?) {
        self.visitorId = visitorId
        self.experienceId = experienceId
        self.experienceKey = experienceKey
        self.variationId = variationId
        self.variationKey = variationKey
    }
}

/// A conversion was queued for tracking.
public struct ConversionPayload: Sendable, Hashable {
    public let visitorId: String
    public let goalId: String
    public let goalKey: String

    public init(visitorId: String, goalId: String, goalKey: String) {
        self.visitorId = visitorId
        self.goalId = goalId
        self.goalKey = goalKey
    }
}

/// A visitor's segments changed.
public struct SegmentsPayload: Sendable, Hashable {
    public let visitorId: String
    public let segments: VisitorSegments

    public init(visitorId: String, segments: VisitorSegments) {
        self.visitorId = visitorId
        self.segments = segments
    }
}

/// A location's rules started matching for a visitor.
public struct LocationActivatedPayload: Sendable, Hashable {
    public let visitorId: String
    public let locationId: String
    public let locationKey: String?
    /// The location properties that matched.
    public let properties: [String: String]

    public init(visitorId: String, locationId: String, locationKey: String?, properties: [String: String]) {
        self.visitorId = visitorId
        self.locationId = locationId
        self.locationKey = locationKey
        self.properties = properties
    }
}

/// A location's rules stopped matching for a visitor.
public struct LocationDeactivatedPayload: Sendable, Hashable {
    public let visitorId: String
    public let locationId: String
    public let locationKey: String?

    public init(visitorId: String, locationId: String, locationKey: String?) {
        self.visitorId = visitorId
        self.locationId = locationId
        self.locationKey = locationKey
    }
}

/// The audiences a visitor matched while an experience was decided.
public struct AudiencesPayload: Sendable, Hashable {
    public let visitorId: String
    public let audienceIds: [String]

    public init(visitorId: String, audienceIds: [String]) {
        self.visitorId = visitorId
        self.audienceIds = audienceIds
    }
}

/// The visitor data store wrote its pending changes.
public struct DataStoreQueueReleasedPayload: Sendable, Hashable {
    /// How many visitor records were written.
    public let recordCount: Int

    public init(recordCount: Int = 0) { self.recordCount = recordCount }
}
