import ConvertJSON

/// A key conversions may carry data under.
public enum GoalDataKey: String, Sendable, Hashable, Codable, CaseIterable {
    case amount
    case productsCount
    case transactionId
    case customDimension1
    case customDimension2
    case customDimension3
    case customDimension4
    case customDimension5
}

/// One piece of conversion data: a number, a string, or an array of strings.
///
/// ```swift
/// await context.trackConversion("purchase", goalData: [.init(.amount, 19.99), .init(.transactionId, "T-1")])
/// ```
public struct GoalDataItem: Sendable, Hashable, Codable {
    public let key: GoalDataKey
    public let value: JSONValue

    public init(_ key: GoalDataKey, _ value: JSONValue) {
        self.key = key
        self.value = value
    }

    /// Why this item cannot be sent, or `nil` when it can: values must be finite numbers,
    /// strings, or arrays of strings.
    public var problem: String? {
        switch value {
        case .number(let n) where !n.isFinite: return "\(key.rawValue) is not a finite number"
        case .number, .string: return nil
        case .array(let items) where items.allSatisfy({ $0.stringValue != nil }): return nil
        default: return "\(key.rawValue) must be a number, a string or an array of strings"
        }
    }
}
