/// What asking for a fresh config gave.
public enum ConfigRefreshResult: Sendable, Hashable {
    /// A new config came and was installed (from a source: a new document was delivered).
    case updated
    /// The config in hand is current: the server answered "not modified" or sent the same config.
    case unchanged
    /// Nothing usable came, for this reason; the config in hand stands.
    case failed(String)
}

/// A config source that can fetch on demand, between its scheduled refreshes.
public protocol RefreshableConfigSource: ConfigSource {
    /// Fetches now, joining a fetch already under way rather than sending another request. A
    /// new document goes to the running ``ConfigSource/run(deliver:report:)``'s `deliver` before
    /// this returns; a "not modified" answer or a failure goes to its `report`. `.failed` when
    /// the source is not running.
    func refresh() async -> ConfigRefreshResult
}
