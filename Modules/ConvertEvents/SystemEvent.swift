/// The SDK's announcements. The raw values are a frozen contract shared with every Convert SDK.
public enum SystemEvent: String, Sendable, Hashable, CaseIterable {
    /// The first config is installed; decisions can be made (`ready`).
    case ready = "ready"
    /// A changed config replaced the installed one (`config.updated`).
    case configUpdated = "config.updated"
    /// The tracking endpoint acknowledged a batch (`api.queue.released`).
    case apiQueueReleased = "api.queue.released"
    /// A visitor got a new decision (`bucketing`); stored decisions do not fire it.
    case bucketing = "bucketing"
    /// A conversion was queued for tracking (`conversion`).
    case conversion = "conversion"
    /// A visitor's stored segments changed (`segments`).
    case segments = "segments"
    /// A location began to match a visitor (`location.activated`).
    case locationActivated = "location.activated"
    /// A location stopped matching a visitor (`location.deactivated`).
    case locationDeactivated = "location.deactivated"
    /// The audiences a visitor matched for an experience (`audiences`).
    case audiences = "audiences"
    /// The visitor data store wrote its pending changes (`datastore.queue.released`).
    case dataStoreQueueReleased = "datastore.queue.released"
}
