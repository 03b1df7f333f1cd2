import ConvertRules

/// One arm of an experience.
public struct Variation: Sendable, Hashable {
    // One shared immutable box: copying a variation (into every decision result) is one retain.
    private final class Storage: Sendable {
        let id: String
        let key: String?
        let name: String?
        let status: String?
        let trafficAllocation: Double?
        let changes: [VariationChange]

        init(id: String, key: String?, name: String?, status: String?, trafficAllocation: Double?,
             changes: [VariationChange]) {
            self.id = id
            self.key = key
            self.name = name
            self.status = status
            self.trafficAllocation = trafficAllocation
            self.changes = changes
        }
    }

    private let storage: Storage

    public var id: String { storage.id }
    public var key: String? { storage.key }
    public var name: String? { storage.name }
    /// `status` as written; absent or `"running"` means the arm takes traffic.
    public var status: String? { storage.status }
    /// The traffic share in percent; `nil` when absent or unreadable (bucketing then uses 100).
    public var trafficAllocation: Double? { storage.trafficAllocation }
    /// The changes the arm applies, feature changes among them.
    public var changes: [VariationChange] { storage.changes }

    public init(id: String, key: String? = nil, name: String? = nil, status: String? = nil,
                trafficAllocation: Double? = nil, changes: [VariationChange] = []) {
        storage = Storage(id: id, key: key, name: name, status: status, trafficAllocation: trafficAllocation,
                          changes: changes)
    }

    public static func == (lhs: Variation, rhs: Variation) -> Bool {
        lhs.storage === rhs.storage
            || (lhs.id == rhs.id && lhs.key == rhs.key && lhs.name == rhs.name && lhs.status == rhs.status
                && lhs.trafficAllocation == rhs.trafficAllocation && lhs.changes == rhs.changes)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(key)
        hasher.combine(changes)
    }

    /// Whether the arm takes traffic.
    public var isActive: Bool { status == nil || status == "running" }

    /// The change that carries the feature with this id, if any.
    public func featureChange(featureId: String) -> VariationChange? {
        changes.first { $0.isFeatureChange && $0.featureId == featureId }
    }

    static func decode(_ f: Fields, _ log: inout DegradationLog) -> Result<Variation, ElementRejection> {
        guard let id = f.identifier("id") else { return .failure(ElementRejection("variation has no id")) }
        return .success(Variation(
            id: id,
            key: f.string("key", &log),
            name: f.string("name", &log),
            status: f.string("status", &log),
            trafficAllocation: f.number("traffic_allocation", &log),
            changes: f.elements("changes", &log, VariationChange.decode)))
    }
}

/// One change a variation applies (`changes[]`).
public struct VariationChange: Sendable, Hashable {
    /// The `type` a change carrying a feature has.
    public static let featureChangeType = "fullStackFeature"

    public let id: String?
    public let type: String?
    /// `data.feature_id`, as a string.
    public let featureId: String?
    /// `data.variables_data`: the feature's variable values, uncast.
    public let variables: [String: JSONValue]

    public init(id: String? = nil, type: String?, featureId: String? = nil, variables: [String: JSONValue] = [:]) {
        self.id = id
        self.type = type
        self.featureId = featureId
        self.variables = variables
    }

    /// Whether this change switches a feature on.
    public var isFeatureChange: Bool { type == Self.featureChangeType }

    static func decode(_ f: Fields, _ log: inout DegradationLog) -> Result<VariationChange, ElementRejection> {
        let data = f.object("data", &log)
        var variables: [String: JSONValue] = [:]
        if let raw = data?.raw("variables_data"), !raw.isNull {
            if case .object(let members) = raw {
                variables = members
            } else {
                log.ignore(data!.childPath("variables_data"), "expected an object, found \(raw.kindName)")
            }
        }
        return .success(VariationChange(
            id: f.identifier("id"),
            type: f.string("type", &log),
            featureId: data?.identifier("feature_id"),
            variables: variables))
    }
}
