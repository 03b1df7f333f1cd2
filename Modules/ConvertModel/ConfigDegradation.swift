/// One place where decoding had to give something up, with where and why.
///
/// ```swift
/// let decoded = try ConfigDecoder.decode(data)
/// for d in decoded.degradations { print(d) }   // "experiences[3]: dropped: element is not an object"
/// ```
public struct ConfigDegradation: Sendable, Hashable, CustomStringConvertible {
    /// What was given up.
    public enum Kind: String, Sendable, Hashable {
        /// A whole array element was left out.
        case droppedElement = "dropped"
        /// A field of the wrong type was ignored; its element was kept with a default.
        case ignoredField = "ignored"
        /// A field of another type was read as JavaScript's `Number()` reads it (`"12"` → 12,
        /// `true` → 1, an object → NaN), which is how Convert's JavaScript SDK uses it.
        case coercedField = "coerced"
    }

    /// The JSON path of the element or field, e.g. `experiences[2].variations[0]`.
    public let path: String
    /// What was given up.
    public let kind: Kind
    /// Why, in words.
    public let reason: String

    /// A degradation at `path`.
    package init(path: String, kind: Kind, reason: String) {
        self.path = path
        self.kind = kind
        self.reason = reason
    }

    public var description: String { "\(path): \(kind.rawValue): \(reason)" }
}

/// Collects degradations while a document is read.
struct DegradationLog {
    var entries: [ConfigDegradation] = []

    mutating func drop(_ path: String, _ reason: String) {
        entries.append(ConfigDegradation(path: path, kind: .droppedElement, reason: reason))
    }

    mutating func coerce(_ path: String, _ reason: String) {
        entries.append(ConfigDegradation(path: path, kind: .coercedField, reason: reason))
    }

    mutating func ignore(_ path: String, _ reason: String) {
        entries.append(ConfigDegradation(path: path, kind: .ignoredField, reason: reason))
    }
}
