import ConvertJSON

/// NaN and the infinities among segment values, kept apart from the JSON that cannot hold them.
///
/// JSON has no NaN or infinity: a stored record writes them as `null` and lists where they were
/// under `nonFinite`, each entry the path to the value (member names and list positions) then
/// `"NaN"`, `"Infinity"` or `"-Infinity"`. Reading puts them back, so a restart changes nothing;
/// a reader that does not know the list reads `null` there, as records written before it did.
package enum NonFiniteValues {
    /// The member a segments object holds the list in, where it is written inside the object
    /// (no report key has this name, and readers keep only report keys).
    package static let member = "nonFinite"

    /// `values` with the list of their non-finite numbers as the member ``member``, when any.
    package static func listing(in values: [String: JSONValue]) -> [String: JSONValue] {
        let found = paths(in: values)
        guard !found.isEmpty else { return values }
        var out = values
        out[member] = .array(found)
        return out
    }

    /// `values` with the numbers listed in their member ``member`` put back (the member stays;
    /// readers keep only report keys).
    package static func restoringListed(in values: [String: JSONValue]) -> [String: JSONValue] {
        guard case .array(let found)? = values[member] else { return values }
        return restoring(found, in: values)
    }

    /// Where the non-finite numbers of `values` are, as the `nonFinite` list; empty when none.
    package static func paths(in values: [String: JSONValue]) -> [JSONValue] {
        var out: [JSONValue] = []
        for (key, value) in values { collect(value, at: [.string(key)], into: &out) }
        return out
    }

    private static func collect(_ value: JSONValue, at path: [JSONValue], into out: inout [JSONValue]) {
        switch value {
        case .number(let number) where !number.isFinite:
            out.append(.array(path + [.string(number.isNaN ? "NaN" : number < 0 ? "-Infinity" : "Infinity")]))
        case .array(let items):
            for (index, item) in items.enumerated() { collect(item, at: path + [.number(Double(index))], into: &out) }
        case .object(let members):
            for (name, member) in members { collect(member, at: path + [.string(name)], into: &out) }
        case .number, .string, .bool, .null:
            break
        }
    }

    /// `values` with the numbers of a `nonFinite` list put back where `null` stands; entries that
    /// name no `null` are ignored.
    package static func restoring(_ paths: [JSONValue], in values: [String: JSONValue]) -> [String: JSONValue] {
        var values = values
        for entry in paths {
            guard case .array(let parts) = entry, parts.count >= 2, case .string(let key)? = parts.first,
                  case .string(let kind)? = parts.last, let number = number(kind), let value = values[key] else { continue }
            values[key] = put(number, at: parts.dropFirst().dropLast(), in: value)
        }
        return values
    }

    private static func number(_ kind: String) -> Double? {
        switch kind {
        case "NaN": .nan
        case "Infinity": .infinity
        case "-Infinity": -.infinity
        default: nil
        }
    }

    private static func put(_ number: Double, at path: ArraySlice<JSONValue>, in value: JSONValue) -> JSONValue {
        guard let step = path.first else { return value.isNull ? .number(number) : value }
        switch (value, step) {
        case (.array(var items), .number(let position)):
            guard let index = Int(exactly: position), items.indices.contains(index) else { return value }
            items[index] = put(number, at: path.dropFirst(), in: items[index])
            return .array(items)
        case (.object(var members), .string(let name)):
            guard let member = members[name] else { return value }
            members[name] = put(number, at: path.dropFirst(), in: member)
            return .object(members)
        default:
            return value
        }
    }
}
