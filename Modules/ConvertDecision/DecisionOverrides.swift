import ConvertModel
import ConvertRules
import Foundation

/// Forced decisions for QA: a variation for an experience, or a feature's state and variables,
/// for every visitor or for one. A forced decision bypasses every gate, is never tracked, stored
/// or announced, and reports reason ``EvaluationReason/static`` (``DecisionReason/forced`` in
/// `explain`).
///
/// ```swift
/// var overrides = DecisionOverrides()
/// overrides.forceVariation("1003142551-variation-1", forExperience: "checkout-test")
/// overrides.forceFeature("new-checkout", enabled: true, variables: ["color": "green"], visitorId: "qa-1")
/// sdk.setOverrides(overrides)
/// ```
///
/// With ``ConvertConfiguration/readsLaunchOverrides`` set, the SDK also reads them, at creation,
/// from the `CONVERT_FORCE` environment variable and from launch arguments
/// (`-ConvertForce experience=variation`, repeatable): see ``fromLaunch()``.
public struct DecisionOverrides: Sendable, Hashable, Codable {
    /// A forced feature: on or off, with these variables when on.
    public struct Feature: Sendable, Hashable, Codable {
        /// On or off.
        public var enabled: Bool
        /// The variables the feature has when on (ignored when off).
        public var variables: [String: JSONValue]

        /// A forced state.
        public init(enabled: Bool, variables: [String: JSONValue] = [:]) {
            self.enabled = enabled
            self.variables = variables
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            enabled = try c.decode(Bool.self, forKey: .enabled)
            variables = try c.decodeIfPresent([String: JSONValue].self, forKey: .variables) ?? [:]
        }
    }

    /// Forced decisions of one visitor (or of all).
    public struct Forced: Sendable, Hashable, Codable {
        /// Experience key → variation key (or id).
        public var variations: [String: String] = [:]
        /// Feature key → its forced state.
        public var features: [String: Feature] = [:]

        /// These forced variations and features.
        public init(variations: [String: String] = [:], features: [String: Feature] = [:]) {
            self.variations = variations
            self.features = features
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            variations = try c.decodeIfPresent([String: String].self, forKey: .variations) ?? [:]
            features = try c.decodeIfPresent([String: Feature].self, forKey: .features) ?? [:]
        }

        package var isEmpty: Bool { variations.isEmpty && features.isEmpty }
    }

    /// For every visitor.
    public var all: Forced
    /// Per visitor id; a visitor's own override wins over the one for all.
    public var visitors: [String: Forced]

    /// No overrides.
    public init(all: Forced = Forced(), visitors: [String: Forced] = [:]) {
        self.all = all
        self.visitors = visitors
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        all = try c.decodeIfPresent(Forced.self, forKey: .all) ?? Forced()
        visitors = try c.decodeIfPresent([String: Forced].self, forKey: .visitors) ?? [:]
    }

    /// Whether nothing is forced.
    public var isEmpty: Bool { all.isEmpty && visitors.values.allSatisfy(\.isEmpty) }

    /// Forces `variation` (a key or an id) of the experience `experienceKey`, for `visitorId` or
    /// for every visitor.
    public mutating func forceVariation(_ variation: String, forExperience experienceKey: String, visitorId: String? = nil) {
        if let visitorId {
            visitors[visitorId, default: Forced()].variations[experienceKey] = variation
        } else {
            all.variations[experienceKey] = variation
        }
    }

    /// Forces the feature `featureKey` on (with `variables`) or off, for `visitorId` or for every visitor.
    public mutating func forceFeature(_ featureKey: String, enabled: Bool, variables: [String: JSONValue] = [:],
                                      visitorId: String? = nil) {
        let feature = Feature(enabled: enabled, variables: variables)
        if let visitorId {
            visitors[visitorId, default: Forced()].features[featureKey] = feature
        } else {
            all.features[featureKey] = feature
        }
    }

    /// The forced variation (key or id) of an experience for a visitor.
    public func variation(forExperience experienceKey: String, visitorId: String) -> String? {
        visitors[visitorId]?.variations[experienceKey] ?? all.variations[experienceKey]
    }

    /// The forced state of a feature for a visitor.
    public func feature(_ featureKey: String, visitorId: String) -> Feature? {
        visitors[visitorId]?.features[featureKey] ?? all.features[featureKey]
    }

    /// Overrides from JSON: `{"all": {"variations": {...}, "features": {...}}, "visitors": {id: {...}}}`
    /// (every part optional).
    public init(json data: Data) throws {
        self = try JSONDecoder().decode(DecisionOverrides.self, from: data)
    }

    /// The environment variable read at SDK creation: `experience=variation` pairs separated by
    /// commas.
    public static let environmentVariable = "CONVERT_FORCE"

    /// The launch argument read at SDK creation, followed by one `experience=variation` pair.
    public static let launchArgument = "-ConvertForce"

    /// What the SDK reads at creation: this process's ``environmentVariable`` and
    /// ``launchArgument`` pairs.
    public static func fromLaunch() -> DecisionOverrides {
        DecisionOverrides(environment: ProcessInfo.processInfo.environment, arguments: ProcessInfo.processInfo.arguments)
    }

    /// Overrides for every visitor from ``environmentVariable`` and ``launchArgument`` pairs
    /// (`experience=variation`; a pair without `=` is ignored).
    package init(environment: [String: String], arguments: [String]) {
        self.init()
        for pair in (environment[Self.environmentVariable] ?? "").split(separator: ",") {
            try? force(pair: String(pair))
        }
        var index = 0
        while index < arguments.count {
            if arguments[index] == Self.launchArgument, index + 1 < arguments.count {
                try? force(pair: arguments[index + 1])
                index += 1
            }
            index += 1
        }
    }

    /// Adds one `experience=variation` pair for every visitor.
    package mutating func force(pair: String) throws {
        let (experience, variation) = try Self.parse(pair: pair)
        forceVariation(variation, forExperience: experience)
    }

    /// The experience key and variation of an `experience=variation` pair (white space
    /// trimmed); throws ``ConvertError/invalidConfiguration(_:)`` for anything else.
    package static func parse(pair: String) throws -> (experience: String, variation: String) {
        let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw ConvertError.invalidConfiguration("an override is EXPERIENCE=VARIATION, got \"\(pair)\"")
        }
        return (parts[0], parts[1])
    }
}
