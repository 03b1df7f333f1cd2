import ConvertSwiftSDK
import Foundation

/// `convert generate swift`: typed keys from a config, as one Swift file.
enum GenerateCommand {
    static let help = """
    usage: convert generate swift (--config FILE | --sdk-key KEY [--sdk-key-secret SECRET]
                                  [--environment ENV] [--endpoint URL])
                                  [--output FILE] [--name NAME] [--access public|internal]

    Writes one Swift file with the config's keys as typed constants: experiences with their
    variations, features with their variables (and a Decodable struct per feature's variables),
    goals. The file imports Foundation only and is the same, byte for byte, for the same config
    content: entries are sorted by key, and the header names the project and the config's
    revision (a fingerprint of its content, leaving out the serving timestamp).

    --config reads a config file (raw CDN body or {"environment": ..., "data": {...}}; - for
    standard input); --sdk-key fetches the live config as "convert fetch" does. --output writes
    the file (left untouched when its content is already the same, so a build does not redo
    what depends on it); without it the file goes to standard output. --name is the enclosing
    type's name (default ConvertKeys); --access the constants' access level (default public).

    Keys become Swift names in lowerCamelCase (types in UpperCamelCase): characters other than
    ASCII letters and digits split words, a name starting with a digit gets a leading "_", a
    Swift keyword a trailing "_", and a name taken twice in one scope "_2", "_3", ... in key order.
    """

    static func run(_ arguments: [String]) async throws -> Int32 {
        guard let language = arguments.first, !language.hasPrefix("--") else {
            throw UsageError("name the language to generate: convert generate swift")
        }
        guard language == "swift" else { throw UsageError("cannot generate \"\(language)\"; the one language is swift") }
        let args = try Arguments(Array(arguments.dropFirst()),
                                 options: FetchCommand.options.subtracting(["secret"]).union(["config", "output", "name", "access"]),
                                 flags: [])
        let name = args.value("name") ?? "ConvertKeys"
        guard SwiftName.isPlainTypeName(name) else {
            throw UsageError("--name must be a Swift type name (an ASCII letter, then letters, digits or _), got \"\(name)\"")
        }
        let access = try args.choice("access", of: ["public", "internal"], default: "public")

        let bytes: Data
        let origin: String
        switch (args.value("config"), args.value("sdk-key")) {
        case (let path?, nil):
            bytes = try Input.read(path, for: "config")
            origin = "--config"
        case (nil, _?):
            bytes = try await FetchCommand.fetch(args)
            origin = "--sdk-key"
        case (_?, _?):
            throw UsageError("give one of --config and --sdk-key")
        case (nil, nil):
            throw UsageError("--config or --sdk-key is required")
        }

        let json: JSONValue
        let decoded: DecodedConfig
        do throws(JSONParseError) {
            json = try JSONParser.parse([UInt8](bytes))
        } catch {
            throw RuntimeError("\(origin): the config is not valid JSON: \(error.description)")
        }
        do throws(ConfigDecodingError) {
            decoded = try ConfigDecoder.decode(json: json)
        } catch {
            throw RuntimeError("\(origin): \(error.description)")
        }
        let source = SwiftKeysFile(config: decoded.config, revision: Revision.of(json), typeName: name, access: access).render()

        guard let output = args.value("output") else {
            FileHandle.standardOutput.write(Data(source.utf8))
            return 0
        }
        let data = Data(source.utf8)
        if FileManager.default.contents(atPath: output) != data {
            do {
                try data.write(to: URL(fileURLWithPath: output), options: .atomic)
            } catch {
                throw RuntimeError("--output: cannot write \(output): \(error.localizedDescription)")
            }
        }
        return 0
    }
}

/// A config's revision: a 64-bit FNV-1a fingerprint of its content with sorted keys, without the
/// serving timestamp `_s_t`, so a re-fetch of an unchanged config gives the same file.
enum Revision {
    static func of(_ json: JSONValue) -> String {
        var document = json
        if case .object(let top) = json, top["account_id"] == nil, let data = top["data"] { document = data }
        if case .object(var members) = document {
            members["_s_t"] = nil
            document = .object(members)
        }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in Output.line(document).utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}

/// Turns config keys into Swift names, and text into Swift literals and comments.
enum SwiftName {
    /// Keywords and names the generated file needs unshadowed; a key that becomes one gets `_`.
    static let reserved: Set<String> = [
        "associatedtype", "class", "deinit", "enum", "extension", "fileprivate", "func", "import", "init", "inout",
        "internal", "let", "open", "operator", "private", "precedencegroup", "protocol", "public", "rethrows", "static",
        "struct", "subscript", "typealias", "var", "break", "case", "catch", "continue", "default", "defer", "do",
        "else", "fallthrough", "for", "guard", "if", "in", "repeat", "return", "throw", "switch", "where", "while",
        "as", "false", "is", "nil", "self", "super", "throws", "true", "try", "await", "async", "actor", "any", "some",
        "package", "consume", "copy", "discard", "each", "borrowing", "consuming", "macro", "nonisolated", "isolated",
        "Any", "Self", "Type", "Protocol", "AnyObject", "Swift", "Foundation",
    ]

    /// Words of `key`: runs of ASCII letters and digits.
    static func words(_ key: String) -> [String] {
        key.unicodeScalars.split { !($0.isASCII && (CharacterSet.alphanumerics.contains($0))) }
            .map { String(String.UnicodeScalarView($0)) }
    }

    /// `key` in lowerCamelCase: "button-height" → `buttonHeight`, "URL-path" → `urlPath`.
    static func member(_ key: String) -> String {
        let parts = words(key)
        guard let first = parts.first else { return "unnamed" }
        return finish(lowerLeading(first) + parts.dropFirst().map(upperFirst).joined())
    }

    /// `key` in UpperCamelCase: "test-experience-1" → `TestExperience1`.
    static func type(_ key: String) -> String {
        let parts = words(key)
        guard !parts.isEmpty else { return "Unnamed" }
        return finish(parts.map(upperFirst).joined())
    }

    /// Whether `name` can name the enclosing type as given.
    static func isPlainTypeName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first.isASCII, CharacterSet.letters.contains(first) else { return false }
        return name.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "_") }
            && !reserved.contains(name)
    }

    private static func finish(_ name: String) -> String {
        if let first = name.unicodeScalars.first, CharacterSet.decimalDigits.contains(first) { return "_" + name }
        return reserved.contains(name) ? name + "_" : name
    }

    private static func upperFirst(_ word: String) -> String { word.prefix(1).uppercased() + word.dropFirst() }

    /// Lower-cases a leading run of capitals, keeping the last one of a run followed by a small
    /// letter as the next word's start ("URLPath" → "urlPath", "ABTest" → "abTest").
    private static func lowerLeading(_ word: String) -> String {
        let characters = Array(word)
        var end = 0
        while end < characters.count, characters[end].isUppercase { end += 1 }
        if end > 1, end < characters.count, characters[end].isLowercase { end -= 1 }
        if end == 0 { return word }
        return String(characters[..<end]).lowercased() + String(characters[end...])
    }

    /// `text` as a Swift string literal.
    static func literal(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7f || scalar.properties.generalCategory == .format {
                    out += "\\u{\(String(scalar.value, radix: 16))}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    /// `text` made safe for a one-line comment: control and format characters become spaces.
    static func comment(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { scalar in
            scalar.value < 0x20 || scalar.value == 0x7f || scalar.properties.generalCategory == .format
                || scalar.properties.generalCategory == .lineSeparator || scalar.properties.generalCategory == .paragraphSeparator
                ? " " : scalar
        }))
    }
}

/// Names handed out in one Swift scope: a taken name gets `_2`, `_3`, ...
private struct Scope {
    private var taken: Set<String>

    init(reserving names: Set<String> = []) { taken = names }

    mutating func claim(_ name: String) -> String {
        var candidate = name
        var suffix = 2
        while taken.contains(candidate) {
            candidate = "\(name)_\(suffix)"
            suffix += 1
        }
        taken.insert(candidate)
        return candidate
    }
}

/// The generated file.
struct SwiftKeysFile {
    let config: ProjectConfig
    let revision: String
    let typeName: String
    let access: String

    private static let keyTypes: [(name: String, what: String)] = [
        ("ExperienceKey", "An experience key, as `ConvertContext.variation(forExperience:)` takes it."),
        ("VariationKey", "A variation key (the variation's id when it has no key)."),
        ("FeatureKey", "A feature key, as `ConvertContext.feature(_:)` takes it."),
        ("VariableKey", "A feature variable's key."),
        ("GoalKey", "A goal key, as `ConvertContext.trackConversion(_:)` takes it."),
    ]

    /// Type names used inside the file, kept free in the scopes that hold generated types.
    private var fixedTypeNames: Set<String> {
        Set(Self.keyTypes.map(\.name) + [typeName, "JSON", "Experiences", "Features", "Goals", "Variations",
                                         "VariableKeys", "Variables", "CodingKeys"])
    }

    func render() -> String {
        var out = Lines()
        let projectName = config.project.name.map { " \"\(SwiftName.comment($0))\"" } ?? ""
        out.add("// Convert keys of project\(projectName) (project \(SwiftName.comment(config.project.id)), "
                + "account \(SwiftName.comment(config.accountId))),")
        out.add("// config revision \(revision) (a fingerprint of the config's content).")
        out.add("// Generated by `convert generate swift`; do not edit: regenerate when the config changes.")
        out.add("")
        out.add("import Foundation")
        out.add("")
        out.add("/// Typed keys of Convert project\(projectName), generated from its config.")
        out.add("\(access) enum \(typeName) {")
        out.depth += 1
        out.add("/// The project's id.")
        out.add("\(access) static let projectId = \(SwiftName.literal(config.project.id))")
        out.add("/// The account's id.")
        out.add("\(access) static let accountId = \(SwiftName.literal(config.accountId))")
        out.add("/// The config revision the keys were generated from.")
        out.add("\(access) static let revision = \(SwiftName.literal(revision))")
        for keyType in Self.keyTypes {
            out.add("")
            renderKeyType(keyType.name, doc: keyType.what, into: &out)
        }
        out.add("")
        renderJSON(into: &out)
        out.add("")
        renderExperiences(into: &out)
        out.add("")
        renderFeatures(into: &out)
        out.add("")
        renderGoals(into: &out)
        out.depth -= 1
        out.add("}")
        return out.text
    }

    private func renderKeyType(_ name: String, doc: String, into out: inout Lines) {
        out.add("/// \(doc)")
        out.add("\(access) struct \(name): Swift.RawRepresentable, Swift.Hashable, Swift.Sendable, Swift.CustomStringConvertible {")
        out.depth += 1
        out.add("/// The key as the config spells it.")
        out.add("\(access) let rawValue: Swift.String")
        out.add("/// Wraps a key.")
        out.add("\(access) init(rawValue: Swift.String) { self.rawValue = rawValue }")
        out.add("/// The key itself.")
        out.add("\(access) var description: Swift.String { rawValue }")
        out.depth -= 1
        out.add("}")
    }

    private func renderJSON(into out: inout Lines) {
        let json = "\(typeName).JSON"
        out.add("/// The value of a `json` variable (or of a variable of a type this file does not know).")
        out.add("\(access) enum JSON: Swift.Codable, Swift.Hashable, Swift.Sendable {")
        out.depth += 1
        out.add("/// `null`.")
        out.add("case null")
        out.add("/// `true` or `false`.")
        out.add("case bool(Swift.Bool)")
        out.add("/// A number.")
        out.add("case number(Swift.Double)")
        out.add("/// A string.")
        out.add("case string(Swift.String)")
        out.add("/// An array.")
        out.add("case array([\(json)])")
        out.add("/// An object.")
        out.add("case object([Swift.String: \(json)])")
        out.add("")
        out.add("/// Decodes any JSON value.")
        out.add("\(access) init(from decoder: any Swift.Decoder) throws {")
        out.depth += 1
        out.add("let container = try decoder.singleValueContainer()")
        out.add("if container.decodeNil() {")
        out.add("    self = .null")
        out.add("} else if let value = try? container.decode(Swift.Bool.self) {")
        out.add("    self = .bool(value)")
        out.add("} else if let value = try? container.decode(Swift.Double.self) {")
        out.add("    self = .number(value)")
        out.add("} else if let value = try? container.decode(Swift.String.self) {")
        out.add("    self = .string(value)")
        out.add("} else if let value = try? container.decode([\(json)].self) {")
        out.add("    self = .array(value)")
        out.add("} else {")
        out.add("    self = .object(try container.decode([Swift.String: \(json)].self))")
        out.add("}")
        out.depth -= 1
        out.add("}")
        out.add("")
        out.add("/// Encodes the value as the JSON it stands for.")
        out.add("\(access) func encode(to encoder: any Swift.Encoder) throws {")
        out.depth += 1
        out.add("var container = encoder.singleValueContainer()")
        out.add("switch self {")
        out.add("case .null: try container.encodeNil()")
        out.add("case .bool(let value): try container.encode(value)")
        out.add("case .number(let value): try container.encode(value)")
        out.add("case .string(let value): try container.encode(value)")
        out.add("case .array(let value): try container.encode(value)")
        out.add("case .object(let value): try container.encode(value)")
        out.add("}")
        out.depth -= 1
        out.add("}")
        out.depth -= 1
        out.add("}")
    }

    private func renderExperiences(into out: inout Lines) {
        let experiences = unique(config.experiences, by: \.key)
        var types = Scope(reserving: fixedTypeNames)
        out.add("/// Experiences, each with its variations.")
        out.add("\(access) enum Experiences {")
        out.depth += 1
        out.add("/// Every experience key, sorted.")
        out.addList("\(access) static let all: [\(typeName).ExperienceKey] =", experiences.map { ".init(rawValue: \(SwiftName.literal($0.key)))" })
        for experience in experiences {
            out.add("")
            var doc = "/// Experience \(SwiftName.literal(experience.key))"
            if let name = experience.name, !name.isEmpty { doc += ", \"\(SwiftName.comment(name))\"" }
            if config.isArchived(experienceId: experience.id) { doc += " (archived)" }
            out.add(doc + ".")
            out.add("\(access) enum \(types.claim(SwiftName.type(experience.key))) {")
            out.depth += 1
            out.add("/// The experience's key.")
            out.add("\(access) static let key = \(typeName).ExperienceKey(rawValue: \(SwiftName.literal(experience.key)))")
            out.add("/// The experience's id.")
            out.add("\(access) static let id = \(SwiftName.literal(experience.id))")
            out.add("/// The variations' keys.")
            out.add("\(access) enum Variations {")
            out.depth += 1
            let variations = unique(experience.variations, by: { $0.key ?? $0.id })
            constants(variations.map { variation in
                var doc = "Variation \(SwiftName.literal(variation.key ?? variation.id))"
                if let name = variation.name, !name.isEmpty { doc += ", \"\(SwiftName.comment(name))\"" }
                if variation.key == nil { doc += " (it has no key: its id)" }
                return (variation.key ?? variation.id, doc + ".")
            }, type: "VariationKey", into: &out)
            out.depth -= 1
            out.add("}")
            out.depth -= 1
            out.add("}")
        }
        out.depth -= 1
        out.add("}")
    }

    private func renderFeatures(into out: inout Lines) {
        let features = unique(config.features, by: \.key)
        var types = Scope(reserving: fixedTypeNames)
        out.add("/// Features, each with its variables' keys and a `Decodable` struct of their values.")
        out.add("\(access) enum Features {")
        out.depth += 1
        out.add("/// Every feature key, sorted.")
        out.addList("\(access) static let all: [\(typeName).FeatureKey] =", features.map { ".init(rawValue: \(SwiftName.literal($0.key)))" })
        for feature in features {
            out.add("")
            var doc = "/// Feature \(SwiftName.literal(feature.key))"
            if let name = feature.name, !name.isEmpty { doc += ", \"\(SwiftName.comment(name))\"" }
            out.add(doc + ".")
            out.add("\(access) enum \(types.claim(SwiftName.type(feature.key))) {")
            out.depth += 1
            out.add("/// The feature's key.")
            out.add("\(access) static let key = \(typeName).FeatureKey(rawValue: \(SwiftName.literal(feature.key)))")
            let variables = unique(feature.variables, by: \.key)
            out.add("/// The variables' keys.")
            out.add("\(access) enum VariableKeys {")
            out.depth += 1
            constants(variables.map { ($0.key, "Variable \(SwiftName.literal($0.key)) (\(Self.typeWord($0.type))).") },
                      type: "VariableKey", into: &out)
            out.depth -= 1
            out.add("}")
            renderVariables(variables, into: &out)
            out.depth -= 1
            out.add("}")
        }
        out.depth -= 1
        out.add("}")
    }

    private func renderVariables(_ variables: [Feature.Variable], into out: inout Lines) {
        var names = Scope(reserving: ["init"])
        let fields = variables.map { (key: $0.key, name: names.claim(SwiftName.member($0.key)), type: swiftType($0.type)) }
        out.add("")
        out.add("/// The variables of a visitor's variation, decoded; `nil` where the variation sets none.")
        out.add("///")
        out.add("/// ```swift")
        out.add("/// let values = try Variables(variables: context.feature(key.rawValue).variables)")
        out.add("/// ```")
        out.add("\(access) struct Variables: Swift.Decodable, Swift.Hashable, Swift.Sendable {")
        out.depth += 1
        for field in fields {
            out.add("/// Variable \(SwiftName.literal(field.key)).")
            out.add("\(access) let \(field.name): \(field.type)?")
        }
        if !fields.isEmpty {
            out.add("")
            out.add("private enum CodingKeys: Swift.String, Swift.CodingKey {")
            out.depth += 1
            for field in fields { out.add("case \(field.name) = \(SwiftName.literal(field.key))") }
            out.depth -= 1
            out.add("}")
        }
        out.add("")
        out.add("/// Decodes a feature decision's variables (`BucketedFeature.variables`, cast to their")
        out.add("/// declared types as the SDK does by default).")
        out.add("\(access) init<Value: Swift.Encodable>(variables: [Swift.String: Value]) throws {")
        out.add("    self = try Foundation.JSONDecoder().decode(Self.self, from: Foundation.JSONEncoder().encode(variables))")
        out.add("}")
        out.depth -= 1
        out.add("}")
    }

    private func renderGoals(into out: inout Lines) {
        let goals = unique(config.goals, by: \.key)
        out.add("/// Goals, for conversions.")
        out.add("\(access) enum Goals {")
        out.depth += 1
        constants(goals.map { goal in
            var doc = "Goal \(SwiftName.literal(goal.key))"
            if let name = goal.name, !name.isEmpty { doc += ", \"\(SwiftName.comment(name))\"" }
            return (goal.key, doc + ".")
        }, type: "GoalKey", into: &out)
        out.depth -= 1
        out.add("}")
    }

    /// One constant per key (already sorted), then `all`.
    private func constants(_ entries: [(key: String, doc: String)], type: String, into out: inout Lines) {
        var names = Scope(reserving: ["all"])
        for entry in entries {
            out.add("/// \(entry.doc)")
            out.add("\(access) static let \(names.claim(SwiftName.member(entry.key))) = \(typeName).\(type)(rawValue: \(SwiftName.literal(entry.key)))")
        }
        out.add("/// Every key above, sorted.")
        out.addList("\(access) static let all: [\(typeName).\(type)] =", entries.map { ".init(rawValue: \(SwiftName.literal($0.key)))" })
    }

    private func swiftType(_ type: VariableType) -> String {
        switch type {
        case .boolean: return "Swift.Bool"
        case .integer: return "Swift.Int"
        case .float: return "Swift.Double"
        case .string: return "Swift.String"
        case .json, .other: return "\(typeName).JSON"
        }
    }

    private static func typeWord(_ type: VariableType) -> String {
        guard case .other(let raw) = type else { return type.name }
        return raw.isEmpty ? "untyped" : SwiftName.comment(raw)
    }

    /// The first element of each key, sorted by the key's UTF-8 bytes (the same on every platform).
    private func unique<Element>(_ elements: [Element], by key: (Element) -> String) -> [Element] {
        var seen = Set<String>()
        return elements.filter { seen.insert(key($0)).inserted }
            .sorted { key($0).utf8.lexicographicallyPrecedes(key($1).utf8) }
    }
}

/// Indented lines of source.
private struct Lines {
    private(set) var text = ""
    /// Levels of indentation of the next line.
    var depth = 0

    /// The current indentation.
    var pad: String { String(repeating: "    ", count: depth) }

    mutating func add(_ line: String) {
        text += line.isEmpty ? "\n" : pad + line + "\n"
    }

    /// `head [` with one item a line, then `]`; `head []` without items.
    mutating func addList(_ head: String, _ items: [String]) {
        guard !items.isEmpty else { return add(head + " []") }
        add(head + " [")
        depth += 1
        for item in items { add(item + ",") }
        depth -= 1
        add("]")
    }
}
