import ConvertModel

/// What the SDK remembers about one visitor.
public struct VisitorData: Sendable, Hashable, Codable {
    /// Sticky decisions: experience id → variation id.
    public var bucketing: [String: String]
    /// Goal ids already converted (dedup).
    public var goals: Set<String>
    /// Report segments, custom segments among them.
    public var segments: VisitorSegments {
        get { segmentsBox?.value ?? VisitorSegments() }
        set { segmentsBox = newValue.isEmpty ? nil : SegmentsBox(newValue) }
    }
    /// Keys of the locations the visitor currently matches.
    public var locations: Set<String>
    // Most visitors have no segments: keeping them out of line saves ~90 bytes per visitor.
    private var segmentsBox: SegmentsBox?

    public init(bucketing: [String: String] = [:], goals: Set<String> = [], segments: VisitorSegments = VisitorSegments(),
                locations: Set<String> = []) {
        self.bucketing = bucketing
        self.goals = goals
        self.locations = locations
        self.segments = segments
    }

    private enum CodingKeys: String, CodingKey {
        case bucketing, goals, segments, locations
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(bucketing: try c.decodeIfPresent([String: String].self, forKey: .bucketing) ?? [:],
                  goals: try c.decodeIfPresent(Set<String>.self, forKey: .goals) ?? [],
                  segments: try c.decodeIfPresent(VisitorSegments.self, forKey: .segments) ?? VisitorSegments(),
                  locations: try c.decodeIfPresent(Set<String>.self, forKey: .locations) ?? [])
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(bucketing, forKey: .bucketing)
        try c.encode(goals, forKey: .goals)
        try c.encode(segments, forKey: .segments)
        try c.encode(locations, forKey: .locations)
    }

    public static func == (lhs: VisitorData, rhs: VisitorData) -> Bool {
        lhs.bucketing == rhs.bucketing && lhs.goals == rhs.goals && lhs.segments == rhs.segments
            && lhs.locations == rhs.locations
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(bucketing)
        hasher.combine(goals)
        hasher.combine(segments)
        hasher.combine(locations)
    }

    /// Whether nothing is remembered.
    public var isEmpty: Bool { bucketing.isEmpty && goals.isEmpty && segmentsBox == nil && locations.isEmpty }

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

/// An immutable box for a visitor's segments.
private final class SegmentsBox: Sendable {
    let value: VisitorSegments
    init(_ value: VisitorSegments) { self.value = value }
}
