import ConvertModel
import ConvertRules

/// A feature as a visitor gets it: on or off, with its variables.
///
/// ```swift
/// let feature = await context.runFeature("new-checkout")
/// if feature.isEnabled, let color = feature.string("button-color") { apply(color) }
/// ```
public struct BucketedFeature: Sendable, Hashable {
    /// On or off.
    public enum Status: String, Sendable, Hashable, Codable {
        /// `enabled` when a bucketed variation carries the feature, else `disabled` (with no
        /// variables).
        case enabled, disabled
    }

    /// The feature key asked for.
    public let key: String
    /// The feature id, `nil` when the key names no feature.
    public let id: String?
    /// The feature's name.
    public let name: String?
    /// Whether the feature is on for the visitor.
    public let status: Status
    /// The experience and variation that switched the feature on.
    public let experienceId: String?
    /// The key of that experience.
    public let experienceKey: String?
    /// The id of the variation that carries the feature.
    public let variationId: String?
    /// The key of that variation.
    public let variationKey: String?
    /// The variables, cast to their declared types unless casting was switched off.
    public let variables: [String: JSONValue]

    /// Whether ``status`` is ``Status/enabled``.
    public var isEnabled: Bool { status == .enabled }

    static func disabled(key: String, feature: Feature?) -> BucketedFeature {
        BucketedFeature(key: key, id: feature?.id, name: feature?.name, status: .disabled, experienceId: nil,
                        experienceKey: nil, variationId: nil, variationKey: nil, variables: [:])
    }

    /// A boolean variable (JS casting applies: `"true"`/`"false"`, otherwise truthiness).
    public func bool(_ name: String) -> Bool? {
        variables[name].map { value in
            if case .bool(let b) = value { return b }
            return FeatureCasting.cast(value, to: .boolean).boolValue ?? false
        }
    }

    /// An integer variable (the leading integer of its text, as `parseInt` reads it).
    public func int(_ name: String) -> Int? {
        guard let value = variables[name] else { return nil }
        guard let number = FeatureCasting.cast(value, to: .integer).numberValue, number.isFinite,
              abs(number) < 9.0e18 else { return nil }
        return Int(number)
    }

    /// A floating-point variable (as `parseFloat` reads it).
    public func double(_ name: String) -> Double? {
        variables[name].flatMap { FeatureCasting.cast($0, to: .float).numberValue }
    }

    /// A variable as text.
    public func string(_ name: String) -> String? {
        variables[name].map { $0.stringValue ?? $0.javaScriptString }
    }

    /// A variable as JSON (strings holding JSON are parsed).
    public func json(_ name: String) -> JSONValue? {
        variables[name].map { FeatureCasting.cast($0, to: .json) }
    }
}

/// The JavaScript SDK's variable casting (`castType`).
public enum FeatureCasting {
    /// A variation's variables for `feature`, each declared one cast to its declared type.
    static func cast(_ variables: [String: JSONValue], _ feature: Feature) -> [String: JSONValue] {
        var out = variables
        for declared in feature.variables {
            if let value = variables[declared.key] { out[declared.key] = cast(value, to: declared.type) }
        }
        return out
    }

    /// Casts a raw variable value to `type`; unknown types pass through.
    public static func cast(_ value: JSONValue, to type: VariableType) -> JSONValue {
        switch type {
        case .boolean:
            if case .string(let s) = value {
                if s == "true" { return true }
                if s == "false" { return false }
            }
            return .bool(value.isTruthy)
        case .integer:
            if case .bool(let b) = value { return b ? 1 : 0 }
            if case .number(let n) = value { return .number(n.rounded(.towardZero)) }
            return JavaScriptNumber.parseInt(value.javaScriptString).map(JSONValue.number) ?? .null
        case .float:
            if case .bool(let b) = value { return b ? 1 : 0 }
            if case .number = value { return value }
            return JavaScriptNumber.parseFloat(value.javaScriptString).map(JSONValue.number) ?? .null
        case .string:
            return .string(value.stringValue ?? value.javaScriptString)
        case .json:
            if case .string(let s) = value {
                return (try? JSONParser.parse(Array(s.utf8))) ?? value
            }
            return value
        case .other:
            return value
        }
    }
}
