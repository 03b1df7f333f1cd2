import ConvertJSON
import ConvertRules

/// A JSON value decoding reads: a ``JSONValue``, or a node of the parsed document.
protocol ConfigValue: JSONDocumentValue {
    /// The value read as Convert's rule JSON.
    var ruleSet: RuleSet { get }
}

extension JSONValue: ConfigValue {
    var ruleSet: RuleSet { RuleSet(json: self) }
}

extension JSONNode: ConfigValue {
    var ruleSet: RuleSet { RuleSet(document: self) }
}

extension JSONDocumentValue {
    var isNull: Bool { jsonKind == .null }

    /// A short name of the JSON type, for messages.
    var kindName: String {
        switch jsonKind {
        case .null: return "null"
        case .bool: return "a boolean"
        case .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    /// An id or other identifier: a string, or a number printed the JS way.
    var identifier: String? {
        if let n = numberValue { return JavaScriptNumber.string(n) }
        return stringValue
    }
}

/// Lenient, reporting access to the members of one JSON object while it becomes a model value.
struct Fields<Value: ConfigValue> {
    let object: Value
    let location: JSONPath

    init?(_ value: Value, location: JSONPath) {
        guard value.jsonKind == .object else { return nil }
        self.object = value
        self.location = location
    }

    /// The JSON path of this object, built only when a message needs it.
    var path: String { location.description }

    func childPath(_ key: String) -> String {
        JSONPath(parent: location, key: key).description
    }

    func raw(_ key: String) -> JSONValue? {
        object.member(key)?.json
    }

    /// An id or other identifier: a string, or a number printed the JS way.
    func identifier(_ key: String) -> String? {
        object.member(key)?.identifier
    }

    /// A text field; a number is printed, anything else but null is reported and ignored.
    func string(_ key: String, _ log: inout DegradationLog) -> String? {
        guard let value = object.member(key), !value.isNull else { return nil }
        if let text = value.identifier { return text }
        log.ignore(childPath(key), "expected a string, found \(value.kindName)")
        return nil
    }

    /// A number, or a numeric string; anything else but null is reported and ignored.
    func number(_ key: String, _ log: inout DegradationLog) -> Double? {
        guard let value = object.member(key), !value.isNull else { return nil }
        if let n = value.numberValue {
            if n.isFinite { return n }
        } else if let s = value.stringValue {
            if let n = Double(s.trimmingSpaces), n.isFinite { return n }
        }
        log.ignore(childPath(key), "expected a finite number, found \(value.kindName)")
        return nil
    }

    /// A number read as JavaScript's `Number(x)` reads it; `nil` when the key is absent (JS's
    /// `undefined`, itself NaN). A value that is not a JSON number or a numeric string is reported
    /// with what it was read as.
    func javaScriptNumber(_ key: String, _ log: inout DegradationLog) -> Double? {
        guard let value = object.member(key) else { return nil }
        if let n = value.numberValue { return n }
        let number = JavaScriptNumber.number(value.json)
        if value.jsonKind == .string, number.isFinite { return number }
        log.coerce(childPath(key), "\(value.kindName) read as \(JavaScriptNumber.string(number))")
        return number
    }

    /// An array's elements; missing or null gives none, another type is reported.
    func array(_ key: String, _ log: inout DegradationLog) -> Value.Elements? {
        guard let value = object.member(key), !value.isNull else { return nil }
        if let elements = value.arrayElements { return elements }
        log.ignore(childPath(key), "expected an array, found \(value.kindName)")
        return nil
    }

    /// A list of ids; elements that are not strings or numbers are reported and skipped.
    func identifiers(_ key: String, _ log: inout DegradationLog) -> [String] {
        var ids: [String] = []
        guard let elements = array(key, &log) else { return ids }
        for (i, element) in elements.enumerated() {
            if let id = element.identifier {
                ids.append(id)
            } else if !element.isNull {
                log.drop("\(childPath(key))[\(i)]", "expected an id, found \(element.kindName)")
            }
        }
        return ids
    }

    /// A nested object; missing or null gives nil, another type is reported.
    func object(_ key: String, _ log: inout DegradationLog) -> Fields? {
        guard let value = object.member(key), !value.isNull else { return nil }
        if let fields = Fields(value, location: JSONPath(parent: location, key: key)) { return fields }
        log.ignore(childPath(key), "expected an object, found \(value.kindName)")
        return nil
    }

    /// A rule tree; null gives nil, a non-object is reported.
    func rules(_ key: String, _ log: inout DegradationLog) -> RuleSet? {
        guard let value = object.member(key), !value.isNull else { return nil }
        guard value.jsonKind == .object else {
            log.ignore(childPath(key), "expected a rule object, found \(value.kindName)")
            return nil
        }
        return value.ruleSet
    }

    /// Decodes every element of an array with `make`, dropping (and reporting) those it rejects.
    func elements<T>(_ key: String, _ log: inout DegradationLog,
                     _ make: (Fields, inout DegradationLog) -> Result<T, ElementRejection>) -> [T] {
        var out: [T] = []
        guard let elements = array(key, &log) else { return out }
        for (i, element) in elements.enumerated() {
            let elementLocation = JSONPath(parent: location, key: key, index: i)
            guard let fields = Fields(element, location: elementLocation) else {
                log.drop(elementLocation.description, "element is not an object (\(element.kindName))")
                continue
            }
            switch make(fields, &log) {
            case .success(let value): out.append(value)
            case .failure(let rejection): log.drop(elementLocation.description, rejection.reason)
            }
        }
        return out
    }
}

/// Why an array element could not become a model value.
struct ElementRejection: Error {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}

extension String {
    var trimmingSpaces: Substring {
        let trimmed = drop(while: { $0 == " " })
        return trimmed.prefix(while: { $0 != " " })
    }
}

/// A position in a JSON document (`experiences[2].variations[0]`), kept as links so that the
/// text is only built when a degradation is reported.
final class JSONPath: CustomStringConvertible {
    let parent: JSONPath?
    let key: String
    let index: Int?

    init(parent: JSONPath?, key: String, index: Int? = nil) {
        self.parent = parent
        self.key = key
        self.index = index
    }

    /// The document itself.
    static func root() -> JSONPath { JSONPath(parent: nil, key: "") }

    var description: String {
        let head = parent.map(\.description) ?? ""
        var text = head.isEmpty ? key : (key.isEmpty ? head : head + "." + key)
        if let index { text += "[\(index)]" }
        return text
    }
}
