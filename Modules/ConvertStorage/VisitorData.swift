import ConvertModel

/// What the SDK remembers about one visitor.
public struct VisitorData: Sendable, Hashable, Codable {
    /// Sticky decisions: experience id → variation id.
    public var bucketing: [String: String]
    /// Goal ids already converted (dedup).
    public var goals: Set<String>
    /// Report segments, custom segments among them.
    public var segments: VisitorSegments
    /// Keys of the locations the visitor currently matches.
    public var locations: Set<String>

    public init(bucketing: [String: String] = [:], goals: Set<String> = [], segments: VisitorSegments = VisitorSegments(),
                locations: Set<String> = []) {
        self.bucketing = bucketing
        self.goals = goals
        self.segments = segments
        self.locations = locations
    }

    /// Whether nothing is remembered.
    public var isEmpty: Bool { bucketing.isEmpty && goals.isEmpty && segments.isEmpty && locations.isEmpty }

    /// The store key of a visitor: `"{accountId}-{projectId}-{visitorId}"`.
    public static func storeKey(accountId: String, projectId: String, visitorId: String) -> String {
        "\(accountId)-\(projectId)-\(visitorId)"
    }
}

/// Per-visitor memory: sticky decisions, goal dedup, segments, locations.
///
/// Implementation requirements: safe to call from any thread; `update` must run its body and
/// store the result atomically with respect to other calls for the same key (two concurrent
/// conversions must not both see a goal as new). Calls sit on the decision path: keep them
/// in memory and O(1); persist behind them (a journal, a write-behind queue).
public protocol VisitorDataStore: Sendable {
    /// The data stored under `key`, if any.
    func data(for key: String) -> VisitorData?
    /// Reads, changes and stores the data under `key` in one step; the body sees empty data for
    /// an unknown key. Returns what the body returns.
    @discardableResult
    func update<Result>(_ key: String, _ body: (inout VisitorData) -> Result) -> Result
    /// Writes pending changes to durable storage; returns how many records were written.
    func flush() async -> Int
}

/// Where an auto-generated visitor id is kept between runs.
///
/// Implementation requirements: safe to call from any thread.
public protocol VisitorIdStore: Sendable {
    /// The stored id, if one was saved.
    func loadVisitorId() -> String?
    /// Remembers `id` for later runs.
    func saveVisitorId(_ id: String)
}
