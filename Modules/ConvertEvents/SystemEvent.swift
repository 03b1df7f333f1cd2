/// The SDK's announcements. The raw values are a frozen contract shared with every Convert SDK.
public enum SystemEvent: String, Sendable, Hashable, CaseIterable {
    case ready = "ready"
    case configUpdated = "config.updated"
    case apiQueueReleased = "api.queue.released"
    case bucketing = "bucketing"
    case conversion = "conversion"
    case segments = "segments"
    case locationActivated = "location.activated"
    case locationDeactivated = "location.deactivated"
    case audiences = "audiences"
    case dataStoreQueueReleased = "datastore.queue.released"
}
