import ConvertJSON

/// A key conversions may carry data under.
public enum GoalDataKey: String, Sendable, Hashable, Codable, CaseIterable {
    /// The conversion's revenue, a number (`amount` on the wire).
    case amount
    /// How many products the conversion involved, a number.
    case productsCount
    /// The order or transaction's id, a string; several transactions of one goal need
    /// `forceMultipleTransactions`.
    case transactionId
    /// A custom dimension of your own (number, string or strings); five are available.
    case customDimension1
    /// The second custom dimension.
    case customDimension2
    /// The third custom dimension.
    case customDimension3
    /// The fourth custom dimension.
    case customDimension4
    /// The fifth custom dimension.
    case customDimension5
}

/// One piece of conversion data: a number, a string, or an array of strings.
///
/// ```swift
/// await context.trackConversion("purchase", goalData: [.init(.amount, 19.99), .init(.transactionId, "T-1")])
/// ```
public struct GoalDataItem: Sendable, Hashable, Codable {
    /// What the value means.
    public let key: GoalDataKey
    /// A finite number, a string, or an array of strings (see ``problem``).
    public let value: JSONValue

    /// An item; literals work for the value (`GoalDataItem(.amount, 19.99)`).
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

    /// At least the bytes of the value as JSON, every string escaped at worst (6 bytes a byte).
    package var valueSizeBound: Int { Self.sizeBound(value) }

    private static func sizeBound(_ value: JSONValue) -> Int {
        switch value {
        case .string(let text): 6 * text.utf8.count + 8
        case .array(let items): items.reduce(8) { $0 + sizeBound($1) + 1 }
        case .object(let members): members.reduce(8) { $0 + 6 * $1.key.utf8.count + 8 + sizeBound($1.value) + 1 }
        case .number, .bool, .null: 32
        }
    }
}
