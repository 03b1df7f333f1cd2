import ConvertRules

/// How one conversion is tracked: the JavaScript SDK's `conversionSetting` option of
/// `trackConversion` (its `ConversionSettingKey` names the one setting there is).
///
/// ```swift
/// await context.trackConversion("purchase", goalData: items, settings: [.forceMultipleTransactions: true])
/// ```
public struct ConversionSettings: Sendable, Hashable, ExpressibleByDictionaryLiteral {
    /// The settings' names, as the JavaScript SDK spells them.
    public enum Key: String, Sendable, Hashable, CaseIterable {
        /// ``ConversionSettings/forceMultipleTransactions``.
        case forceMultipleTransactions
    }

    /// Send the transaction (the goal data) even when the visitor already converted on the goal;
    /// the conversion itself is still sent once per visitor. Without goal data it changes nothing.
    public var forceMultipleTransactions: Bool

    /// Settings with these values.
    public init(forceMultipleTransactions: Bool = false) {
        self.forceMultipleTransactions = forceMultipleTransactions
    }

    /// Settings from a JavaScript-style record such as `["forceMultipleTransactions": true]`.
    /// Each value counts as JavaScript tests it (truthiness: `1` and `"yes"` set it, `0`, `""`,
    /// `false` and `null` do not); keys that name no setting are ignored, as JavaScript ignores them.
    public init(_ values: [String: JSONValue]) {
        self.init(forceMultipleTransactions: values[Key.forceMultipleTransactions.rawValue]?.isTruthy ?? false)
    }

    /// Settings from a literal, e.g. `[.forceMultipleTransactions: true]` (values read as in
    /// ``init(_:)``; a key given twice takes its last value).
    public init(dictionaryLiteral elements: (Key, JSONValue)...) {
        var values: [String: JSONValue] = [:]
        for (key, value) in elements { values[key.rawValue] = value }
        self.init(values)
    }
}
