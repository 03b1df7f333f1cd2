import ConvertModel
import ConvertRules

/// A feature as a visitor gets it: on or off, with its variables.
///
/// ```swift
/// let feature = await context.runFeature("new-checkout")
/// if feature.isEnabled, let color = feature.string("button-color") { apply(color) }
/// ```
public struct BucketedFeature: Sendable, Hashable, CustomReflectable {
    /// On or off.
    public enum Status: String, Sendable, Hashable, Codable {
        /// `enabled` when a bucketed variation carries the feature, else `disabled` (with no
        /// variables).
        case enabled, disabled
    }

    // One shared immutable box: a feature's results are built when a config is installed, one
    // per carrier variation, so handing one out costs one retain instead of one per field.
    private struct Fields: Sendable, Hashable {
        package let key: String
        package let id: String?
        package let name: String?
        package let status: Status
        package let experienceId: String?
        package let experienceKey: String?
        package let variationId: String?
        package let variationKey: String?
        package let variables: [String: JSONValue]
    }

    private final class Storage: Sendable {
        package let fields: Fields

        package init(_ fields: Fields) {
            self.fields = fields
        }
    }

    private let storage: Storage

    package init(key: String, id: String?, name: String?, status: Status, experienceId: String?, experienceKey: String?,
         variationId: String?, variationKey: String?, variables: [String: JSONValue]) {
        storage = Storage(Fields(key: key, id: id, name: name, status: status, experienceId: experienceId,
                                 experienceKey: experienceKey, variationId: variationId, variationKey: variationKey,
                                 variables: variables))
    }

    /// The feature key asked for.
    public var key: String { storage.fields.key }
    /// The feature id, `nil` when the key names no feature.
    public var id: String? { storage.fields.id }
    /// The feature's name.
    public var name: String? { storage.fields.name }
    /// Whether the feature is on for the visitor.
    public var status: Status { storage.fields.status }
    /// The experience and variation that switched the feature on.
    public var experienceId: String? { storage.fields.experienceId }
    /// The key of that experience.
    public var experienceKey: String? { storage.fields.experienceKey }
    /// The id of the variation that carries the feature.
    public var variationId: String? { storage.fields.variationId }
    /// The key of that variation.
    public var variationKey: String? { storage.fields.variationKey }
    /// The variables, cast to their declared types unless casting was switched off.
    public var variables: [String: JSONValue] { storage.fields.variables }

    /// Whether two results are the same feature, status, carrier and variables.
    public static func == (lhs: BucketedFeature, rhs: BucketedFeature) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.fields == rhs.storage.fields
    }

    /// Hashes what ``==`` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(storage.fields)
    }

    /// The fields, for `print`, `dump` and the debugger (the box behind them is not shown).
    public var customMirror: Mirror {
        Mirror(self, children: Mirror(reflecting: storage.fields).children, displayStyle: .struct)
    }

    /// Whether ``status`` is ``Status/enabled``.
    public var isEnabled: Bool { status == .enabled }

    package static func disabled(key: String, feature: Feature?) -> BucketedFeature {
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
package enum FeatureCasting {
    /// A variation's variables for `feature`, each declared one cast to its declared type.
    package static func cast(_ variables: [String: JSONValue], _ feature: Feature) -> [String: JSONValue] {
        var out = variables
        for declared in feature.variables {
            if let value = variables[declared.key] { out[declared.key] = cast(value, to: declared.type) }
        }
        return out
    }

    /// Casts a raw variable value to `type`; unknown types pass through.
    package static func cast(_ value: JSONValue, to type: VariableType) -> JSONValue {
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
