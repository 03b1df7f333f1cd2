import ConvertRules

/// How often an audience is re-checked for a visitor who already has a decision.
public enum AudienceType: Sendable, Hashable {
    /// Checked once, at the first decision; skipped afterwards.
    case permanent
    /// Checked on every decision.
    case transient
    /// A type this SDK does not know; treated as transient.
    case other(String)

    init(_ raw: String?) {
        switch raw {
        case "permanent": self = .permanent
        case "transient", nil: self = .transient
        case let other?: self = .other(other)
        }
    }
}

/// A named rule set over visitor attributes that experiences target.
public struct Audience: Sendable, Hashable {
    /// The audience's id; experiences list audiences by it.
    public let id: String
    /// The audience's key; `nil` when the config gives none.
    public let key: String?
    /// The name shown in the Convert app; `nil` when absent.
    public let name: String?
    /// Whether the audience is checked once (`permanent`) or on every decision (`transient`, the
    /// default).
    public let type: AudienceType
    /// The rules; `nil` (null in the config) never matches.
    public let rules: RuleSet?

    /// An audience as the config describes it (for tests and hand-built configs).
    package init(id: String, key: String? = nil, name: String? = nil, type: AudienceType = .transient, rules: RuleSet?) {
        self.id = id
        self.key = key
        self.name = name
        self.type = type
        self.rules = rules
    }

    static func decode<Value>(_ f: Fields<Value>, _ log: inout DegradationLog) -> Result<Audience, ElementRejection> {
        guard let id = f.identifier("id") else { return .failure(ElementRejection("audience has no id")) }
        return .success(Audience(id: id, key: f.string("key", &log), name: f.string("name", &log),
                                 type: AudienceType(f.string("type", &log)), rules: f.rules("rules", &log)))
    }
}

/// A visitor segment: custom segments are assigned when their rules match.
public struct Segment: Sendable, Hashable {
    /// The segment's id; `customSegments` and experiences name segments by it.
    public let id: String
    /// The segment's key; `nil` when the config gives none.
    public let key: String?
    /// The name shown in the Convert app; `nil` when absent.
    public let name: String?
    /// The rules `runCustomSegments` checks its rule data against; `nil` never matches rule data.
    public let rules: RuleSet?

    /// A segment as the config describes it.
    package init(id: String, key: String? = nil, name: String? = nil, rules: RuleSet?) {
        self.id = id
        self.key = key
        self.name = name
        self.rules = rules
    }

    static func decode<Value>(_ f: Fields<Value>, _ log: inout DegradationLog) -> Result<Segment, ElementRejection> {
        guard let id = f.identifier("id") else { return .failure(ElementRejection("segment has no id")) }
        return .success(Segment(id: id, key: f.string("key", &log), name: f.string("name", &log),
                                rules: f.rules("rules", &log)))
    }
}

/// Where an experience runs, as rules over location properties.
public struct Location: Sendable, Hashable {
    /// The location's id; experiences list locations by it.
    public let id: String
    /// The location's key; `nil` when the config gives none.
    public let key: String?
    /// The name shown in the Convert app; `nil` when absent.
    public let name: String?
    /// The rules over location properties; `nil` (null in the config) never matches.
    public let rules: RuleSet?
    /// `trigger.type`, e.g. `"upon_run"`.
    public let triggerType: String?

    /// A location as the config describes it.
    package init(id: String, key: String? = nil, name: String? = nil, rules: RuleSet?, triggerType: String? = nil) {
        self.id = id
        self.key = key
        self.name = name
        self.rules = rules
        self.triggerType = triggerType
    }

    static func decode<Value>(_ f: Fields<Value>, _ log: inout DegradationLog) -> Result<Location, ElementRejection> {
        guard let id = f.identifier("id") else { return .failure(ElementRejection("location has no id")) }
        return .success(Location(id: id, key: f.string("key", &log), name: f.string("name", &log),
                                 rules: f.rules("rules", &log),
                                 triggerType: f.object("trigger", &log)?.string("type", &log)))
    }
}

/// A conversion goal.
public struct Goal: Sendable, Hashable {
    /// The goal's id, sent in conversion events.
    public let id: String
    /// The key `trackConversion` takes.
    public let key: String
    /// The name shown in the Convert app; `nil` when absent.
    public let name: String?
    /// The goal's type in the Convert app (e.g. `"dom_interaction"`), uninterpreted; `nil` when
    /// absent.
    public let type: String?
    /// Rules a conversion's rule data must match, when given.
    public let rules: RuleSet?

    /// A goal as the config describes it.
    package init(id: String, key: String, name: String? = nil, type: String? = nil, rules: RuleSet? = nil) {
        self.id = id
        self.key = key
        self.name = name
        self.type = type
        self.rules = rules
    }

    static func decode<Value>(_ f: Fields<Value>, _ log: inout DegradationLog) -> Result<Goal, ElementRejection> {
        guard let id = f.identifier("id") else { return .failure(ElementRejection("goal has no id")) }
        guard let key = f.identifier("key") else { return .failure(ElementRejection("goal has no key")) }
        return .success(Goal(id: id, key: key, name: f.string("name", &log), type: f.string("type", &log),
                             rules: f.rules("rules", &log)))
    }
}

/// The declared type of a feature variable.
public enum VariableType: Sendable, Hashable {
    /// The config's `boolean`, `integer`, `float`, `string` and `json` types, which variable values
    /// are cast to.
    case boolean, integer, float, string, json
    /// A type this SDK does not know; values are passed through uncast.
    case other(String)

    init(_ raw: String?) {
        switch raw {
        case "boolean": self = .boolean
        case "integer": self = .integer
        case "float": self = .float
        case "string": self = .string
        case "json": self = .json
        default: self = .other(raw ?? "")
        }
    }

    /// The type as the config writes it (`"boolean"`, …; an unknown type's own text).
    public var name: String {
        switch self {
        case .boolean: return "boolean"
        case .integer: return "integer"
        case .float: return "float"
        case .string: return "string"
        case .json: return "json"
        case .other(let raw): return raw
        }
    }
}

/// A feature flag with typed variables.
public struct Feature: Sendable, Hashable {
    /// One declared variable.
    public struct Variable: Sendable, Hashable {
        /// The variable's key within its feature.
        public let key: String
        /// The declared type values are cast to.
        public let type: VariableType

        /// A variable declaration.
        package init(key: String, type: VariableType) {
            self.key = key
            self.type = type
        }
    }

    /// The feature's id; variations switch features on by it.
    public let id: String
    /// The key `feature(_:)` takes.
    public let key: String
    /// The name shown in the Convert app; `nil` when absent.
    public let name: String?
    /// The declared variables, in config order.
    public let variables: [Variable]

    /// A feature as the config describes it.
    package init(id: String, key: String, name: String? = nil, variables: [Variable] = []) {
        self.id = id
        self.key = key
        self.name = name
        self.variables = variables
    }

    static func decode<Value>(_ f: Fields<Value>, _ log: inout DegradationLog) -> Result<Feature, ElementRejection> {
        guard let id = f.identifier("id") else { return .failure(ElementRejection("feature has no id")) }
        guard let key = f.identifier("key") else { return .failure(ElementRejection("feature has no key")) }
        let variables = f.elements("variables", &log) { v, log -> Result<Variable, ElementRejection> in
            guard let key = v.identifier("key") else { return .failure(ElementRejection("variable has no key")) }
            return .success(Variable(key: key, type: VariableType(v.string("type", &log))))
        }
        return .success(Feature(id: id, key: key, name: f.string("name", &log), variables: variables))
    }
}

/// The project a config belongs to.
public struct Project: Sendable, Hashable {
    /// The project's id; tracking goes to this project.
    public let id: String
    /// The project's name in the Convert app; `nil` when absent.
    public let name: String?
    /// The project's type (e.g. `"fullstack"`), uninterpreted; `nil` when absent.
    public let type: String?
    /// `utc_offset` read as a number (it arrives as a number or a string).
    public let utcOffset: Double?
    /// `settings`, uninterpreted.
    public let settings: JSONValue?

    /// A project as the config describes it.
    package init(id: String, name: String? = nil, type: String? = nil, utcOffset: Double? = nil, settings: JSONValue? = nil) {
        self.id = id
        self.name = name
        self.type = type
        self.utcOffset = utcOffset
        self.settings = settings
    }
}
