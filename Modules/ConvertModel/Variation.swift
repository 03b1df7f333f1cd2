import ConvertRules

/// One arm of an experience.
public struct Variation: Sendable, Hashable {
    // One shared immutable box: copying a variation (into every decision result) is one retain.
    private final class Storage: Sendable {
        let id: String
        let key: String?
        let name: String?
        let status: String?
        let isActive: Bool
        let trafficAllocation: Double?
        let changes: [VariationChange]

        init(id: String, key: String?, name: String?, status: String?, isActive: Bool, trafficAllocation: Double?,
             changes: [VariationChange]) {
            self.id = id
            self.key = key
            self.name = name
            self.status = status
            self.isActive = isActive
            self.trafficAllocation = trafficAllocation
            self.changes = changes
        }
    }

    private let storage: Storage

    /// The variation's id: what bucketing picks, what is stored and tracked.
    public var id: String { storage.id }
    /// The variation's key; `nil` when the config gives none.
    public var key: String? { storage.key }
    /// The key, or the id when the config gives no key: what tables and messages show.
    public var keyOrId: String { storage.key ?? storage.id }
    /// The name shown in the Convert app; `nil` when absent.
    public var name: String? { storage.name }
    /// `status` as written (a number printed); see ``isActive``.
    public var status: String? { storage.status }
    /// The traffic share in percent as JavaScript's `Number()` reads `traffic_allocation`:
    /// `nil` when absent, NaN when present but not numeric (a non-numeric string, an object).
    /// Bucketing treats absent as 100 and NaN the way the JavaScript SDK does (`BucketArm`).
    public var trafficAllocation: Double? { storage.trafficAllocation }
    /// The changes the arm applies, feature changes among them.
    public var changes: [VariationChange] { storage.changes }

    /// A variation as the config describes it; it takes traffic when `status` is `nil`, empty or
    /// `"running"`.
    package init(id: String, key: String? = nil, name: String? = nil, status: String? = nil,
                trafficAllocation: Double? = nil, changes: [VariationChange] = []) {
        self.init(id: id, key: key, name: name, status: status,
                  isActive: status == nil || status == "" || status == Self.runningStatus,
                  trafficAllocation: trafficAllocation, changes: changes)
    }

    init(id: String, key: String?, name: String?, status: String?, isActive: Bool, trafficAllocation: Double?,
         changes: [VariationChange]) {
        storage = Storage(id: id, key: key, name: name, status: status, isActive: isActive,
                          trafficAllocation: trafficAllocation, changes: changes)
    }

    static let runningStatus = "running"

    public static func == (lhs: Variation, rhs: Variation) -> Bool {
        lhs.storage === rhs.storage
            || (lhs.id == rhs.id && lhs.key == rhs.key && lhs.name == rhs.name && lhs.status == rhs.status
                && lhs.isActive == rhs.isActive && lhs.trafficAllocation?.bitPattern == rhs.trafficAllocation?.bitPattern
                && lhs.changes == rhs.changes)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(key)
        hasher.combine(changes)
    }

    /// Whether the arm takes traffic: its `status` is falsy in JavaScript's sense (absent, null,
    /// `""`, `false`, `0`) or exactly `"running"`.
    public var isActive: Bool { storage.isActive }

    /// The change that carries the feature with this id, if any.
    public func featureChange(featureId: String) -> VariationChange? {
        changes.first { $0.isFeatureChange && $0.featureId == featureId }
    }

    static func decode<Value>(_ f: Fields<Value>, _ log: inout DegradationLog) -> Result<Variation, ElementRejection> {
        guard let id = f.identifier("id") else { return .failure(ElementRejection("variation has no id")) }
        let status = f.raw("status")
        return .success(Variation(
            id: id,
            key: f.string("key", &log),
            name: f.string("name", &log),
            status: f.string("status", &log),
            isActive: status.map { !$0.isTruthy || $0 == .string(runningStatus) } ?? true,
            trafficAllocation: f.javaScriptNumber("traffic_allocation", &log),
            changes: f.elements("changes", &log) { VariationChange.decode($0, &$1) }))
    }
}

/// One change a variation applies (`changes[]`).
public struct VariationChange: Sendable, Hashable {
    /// The `type` a change carrying a feature has.
    public static let featureChangeType = "fullStackFeature"

    /// The change's id; `nil` when absent.
    public let id: String?
    /// The change's type; ``featureChangeType`` for one that carries a feature.
    public let type: String?
    /// `data.feature_id`, as a string.
    public let featureId: String?
    /// `data.variables_data`: the feature's variable values, uncast.
    public let variables: [String: JSONValue]

    /// A change as the config describes it.
    package init(id: String? = nil, type: String?, featureId: String? = nil, variables: [String: JSONValue] = [:]) {
        self.id = id
        self.type = type
        self.featureId = featureId
        self.variables = variables
    }

    /// Whether this change switches a feature on.
    public var isFeatureChange: Bool { type == Self.featureChangeType }

    static func decode<Value>(_ f: Fields<Value>, _ log: inout DegradationLog) -> Result<VariationChange, ElementRejection> {
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
