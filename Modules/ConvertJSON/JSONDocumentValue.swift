/// A JSON value as readers of a parsed document see it: a ``JSONValue``, or a ``JSONNode`` of a
/// ``JSONTape`` that builds ``JSONValue``s only for the parts a reader keeps.
package protocol JSONDocumentValue {
    /// The elements of an array, in order.
    associatedtype Elements: Sequence where Elements.Element == Self

    /// The value's JSON type.
    var jsonKind: JSONKind { get }
    /// The member named `key`, if this is an object that has it (the last of repeated keys).
    func member(_ key: String) -> Self?
    /// The elements, if this is an array.
    var arrayElements: Elements? { get }
    /// The boolean payload, if this is a boolean.
    var boolValue: Bool? { get }
    /// The numeric payload, if this is a number.
    var numberValue: Double? { get }
    /// The string payload, if this is a string.
    var stringValue: String? { get }
    /// The value as a ``JSONValue``.
    var json: JSONValue { get }
}

/// The JSON types.
package enum JSONKind: Sendable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool
    /// A number.
    case number
    /// A string.
    case string
    /// An array.
    case array
    /// An object.
    case object
}

extension JSONValue: JSONDocumentValue {
    /// This value's JSON type.
    package var jsonKind: JSONKind {
        switch self {
        case .null: return .null
        case .bool: return .bool
        case .number: return .number
        case .string: return .string
        case .array: return .array
        case .object: return .object
        }
    }

    /// The member named `key`, if this is an object that has it.
    package func member(_ key: String) -> JSONValue? { self[key] }
    /// The elements, if this is an array.
    package var arrayElements: [JSONValue]? { arrayValue }
    /// The value itself.
    package var json: JSONValue { self }
}
