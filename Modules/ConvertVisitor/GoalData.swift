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

    /// The longest string value, in UTF-8 bytes.
    public static let maximumStringBytes = 1_024
    /// The most strings in an array value.
    public static let maximumArrayCount = 100

    /// Why this item cannot be sent, or `nil` when it can: values must be finite numbers,
    /// strings of at most ``maximumStringBytes``, or arrays of at most ``maximumArrayCount``
    /// such strings.
    public var problem: String? {
        switch value {
        case .number(let n) where !n.isFinite: return "\(key.rawValue) is not a finite number"
        case .number: return nil
        case .string(let text): return Self.tooLong(text) ? "\(key.rawValue) is longer than \(Self.maximumStringBytes) bytes" : nil
        case .array(let items) where items.allSatisfy({ $0.stringValue != nil }):
            if items.count > Self.maximumArrayCount { return "\(key.rawValue) has more than \(Self.maximumArrayCount) values" }
            if items.contains(where: { Self.tooLong($0.stringValue ?? "") }) {
                return "\(key.rawValue) has a value longer than \(Self.maximumStringBytes) bytes"
            }
            return nil
        default: return "\(key.rawValue) must be a number, a string or an array of strings"
        }
    }

    private static func tooLong(_ text: String) -> Bool { text.utf8.count > maximumStringBytes }
}
