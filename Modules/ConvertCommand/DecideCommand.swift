import ConvertSwiftSDK
import Foundation

/// `convert decide`: every experience and feature for each visitor of a JSON-lines input.
enum DecideCommand {
    static let help = """
    usage: convert decide --config FILE [--input FILE|-] [--environment ENV] [--format json|table] [--details]
                          [--snapshot] [--force EXPERIENCE=VARIATION]...

    Decides every experience and feature of the config for each visitor, offline (no network,
    no tracking). The config may be the raw CDN body or {"environment": ..., "data": {...}}.

    Input (--input, standard input by default or with -): one JSON object per line,
      {"visitorId": "...", "attributes": {...}, "locationProperties": {...}}
    Lines are read as they arrive and each is answered at once, so decide can sit behind a pipe.

    --format json (the default): one JSON object per visitor, written as soon as it is decided,
      {"visitorId": "...", "experiences": {"<key>": "<variationKey>" | null, ...},
       "features": {"<key>": {"status": "enabled" | "disabled", "variables": {...}}, ...}}
    --details: with --format json, each object also has "details": per experience
      {"reason", "decisionReason", "errorCode"?, "gate"?} (reason in OpenFeature's terms:
      targetingMatch, split, cached, static, disabled, default, error; gate: the check that
      kept the visitor out, e.g. {"audiences": ["<id>", ...]}), and per feature
      {"reason", "experience"?} (the experience that switched it on).
    --snapshot: instead, one decision snapshot per visitor (the SDK's DecisionSnapshot in its
      stable JSON: sorted keys, experiences with their variations and changes, features with
      their variables, the config's revision), for a client to render without the config.
    --force EXPERIENCE=VARIATION (repeatable): a QA override for every visitor; the experience
      gives that variation (its key or id) whatever the gates, reason "static".
    --format table: aligned columns for reading, the visitor, one column per experience key
      with the variation key or -, then one column per feature key with on or off; printed
      when the input ends, since the columns are sized to fit every row.

    A malformed line, or one over 1 MiB, is reported on standard error with its number (and
    the column of a JSON syntax error); the others are still decided, and the exit status is 1. --visitors FILE is a deprecated name of --input.
    """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let args = try Arguments(arguments, options: ["config", "input", "visitors", "environment", "format"],
                                 flags: ["details", "snapshot"], repeatable: ["force"])
        let table = try args.choice("format", of: ["json", "table"], default: "json") == "table"
        let details = args.flag("details")
        if details && table { throw UsageError("--details goes with --format json") }
        let snapshots = args.flag("snapshot")
        if snapshots && (table || details) { throw UsageError("--snapshot goes with neither --format table nor --details") }
        var inputPath = args.value("input") ?? "-", inputOption = "input"
        if let legacy = args.value("visitors") {
            guard args.value("input") == nil else { throw UsageError("give --input only (--visitors is its deprecated name)") }
            Output.warning("decide --visitors FILE is deprecated; use --input FILE")
            inputPath = legacy
            inputOption = "visitors"
        }
        // The config first: a bad config fails before anything is read from the input.
        let sdk = try await Input.offlineSDK(configPath: try args.required("config"), environment: args.value("environment"))
        var overrides = DecisionOverrides()
        for pair in args.values("force") {
            guard let (key, variation) = try? DecisionOverrides.parse(pair: pair) else {
                throw UsageError("--force must be EXPERIENCE=VARIATION, got \"\(pair)\"")
            }
            guard let experience = sdk.config?.experience(key: key) else {
                let known = (sdk.config?.experiences.map(\.key) ?? []).joined(separator: ", ")
                throw UsageError("--force: no experience has the key \"\(key)\" (known: \(known))")
            }
            guard experience.variations.contains(where: { $0.key == variation || $0.id == variation }) else {
                let known = experience.variations.map(\.keyOrId).joined(separator: ", ")
                throw UsageError("--force: experience \(key) has no variation \"\(variation)\" (known: \(known))")
            }
            overrides.forceVariation(variation, forExperience: key)
        }
        if !overrides.isEmpty { sdk.setOverrides(overrides) }
        var input = try Input.lines(inputPath, for: inputOption)
        let experienceKeys = sdk.config?.experiences.map(\.key) ?? []
        let featureKeys = sdk.config?.features.map(\.key) ?? []
        var rows: [[String]] = []
        var failed = false
        var lineNumber = 0
        while true {
            let line: ArraySlice<UInt8>
            do {
                guard let next = try input.next() else { break }
                line = next
            } catch is LineReader.LineTooLong {
                lineNumber += 1
                failed = true
                Output.error("line \(lineNumber) too long (over \(LineReader.maximumLineBytes) bytes); skipped")
                continue
            }
            lineNumber += 1
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            do {
                let visitor = try VisitorLine(Array(line))
                if snapshots {
                    Output.write(try snapshot(visitor, sdk))
                    continue
                }
                let decision = decide(visitor, sdk, experienceKeys: experienceKeys, details: details)
                if table {
                    rows.append([visitor.visitorId] + experienceKeys.map { decision["experiences"]?[$0]?.stringValue ?? "-" }
                                + featureKeys.map { decision["features"]?[$0]?["status"]?.stringValue == "enabled" ? "on" : "off" })
                } else {
                    Output.write(Output.line(decision))
                }
            } catch let error as UsageError {
                failed = true
                // "line 3, column 7: …" for a syntax error, "line 3: …" otherwise.
                Output.error("line \(lineNumber)\(error.description.hasPrefix("column ") ? ", " : ": ")\(error.description)")
            }
        }
        if table { Output.write(Self.table(header: ["visitor"] + experienceKeys + featureKeys, rows: rows)) }
        return failed ? 1 : 0
    }

    static func decide(_ visitor: VisitorLine, _ sdk: ConvertSwiftSDK, experienceKeys: [String],
                       details: Bool = false) -> JSONValue {
        let context = sdk.createContext(visitorId: visitor.visitorId, attributes: visitor.attributes)
        context.setLocationProperties(visitor.locationProperties)
        var experiences: [String: JSONValue] = [:]
        var experienceDetails: [String: VariationDetail] = [:]
        for key in experienceKeys {
            let detail = context.variationDetail(forExperience: key)
            experiences[key] = detail.variant.map(JSONValue.string) ?? .null
            if details { experienceDetails[key] = detail }
        }
        var features: [String: JSONValue] = [:]
        var featureDetails: [String: JSONValue] = [:]
        for feature in context.features() {
            features[feature.key] = ["status": .string(feature.status.rawValue), "variables": .object(feature.variables)]
            guard details else { continue }
            if let carrier = feature.experienceKey, feature.isEnabled {
                let reason = experienceDetails[carrier]?.reason ?? .default
                featureDetails[feature.key] = ["reason": .string(reason.rawValue), "experience": .string(carrier)]
            } else {
                featureDetails[feature.key] = ["reason": .string(EvaluationReason.default.rawValue)]
            }
        }
        var out: [String: JSONValue] = ["visitorId": .string(visitor.visitorId), "experiences": .object(experiences),
                                        "features": .object(features)]
        if details {
            out["details"] = ["experiences": .object(experienceDetails.mapValues(json)), "features": .object(featureDetails)]
        }
        return .object(out)
    }

    /// The visitor's decision snapshot, in its stable JSON form.
    static func snapshot(_ visitor: VisitorLine, _ sdk: ConvertSwiftSDK) throws -> String {
        let context = sdk.createContext(visitorId: visitor.visitorId, attributes: visitor.attributes)
        context.setLocationProperties(visitor.locationProperties)
        guard let snapshot = context.snapshot(), let data = try? snapshot.jsonData() else {
            throw UsageError("no snapshot for visitor \"\(visitor.visitorId.prefix(64))\"")
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// A detail as JSON: the reasons, the error code and the gate when there are.
    static func json(_ detail: VariationDetail) -> JSONValue {
        var out: [String: JSONValue] = ["reason": .string(detail.reason.rawValue),
                                        "decisionReason": .string(detail.decisionReason.rawValue)]
        if let errorCode = detail.errorCode { out["errorCode"] = .string(errorCode.rawValue) }
        switch detail.gate {
        case nil: break
        case .archived?: out["gate"] = "archived"
        case .environment(let experience, let sdk)?: out["gate"] = ["environment": ["experience": .string(experience), "sdk": .string(sdk)]]
        case .locations(let ids)?: out["gate"] = ["locations": .array(ids.map(JSONValue.string))]
        case .siteArea?: out["gate"] = "siteArea"
        case .audiences(let ids)?: out["gate"] = ["audiences": .array(ids.map(JSONValue.string))]
        case .segments(let required)?: out["gate"] = ["segments": .array(required.map(JSONValue.string))]
        case .traffic?: out["gate"] = "traffic"
        }
        return .object(out)
    }

    /// Columns padded to their widest cell, two spaces apart, no trailing spaces.
    static func table(header: [String], rows: [[String]]) -> String {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        return all.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[column] - cell.count)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}

/// One input line of `decide`.
struct VisitorLine {
    let visitorId: String
    let attributes: [String: JSONValue]
    let locationProperties: [String: JSONValue]

    init(_ bytes: [UInt8]) throws {
        let json: JSONValue
        do throws(JSONParseError) {
            json = try JSONParser.parse(bytes)
        } catch {
            if case .empty = error { throw UsageError("expected a JSON object") }
            let (message, offset) = Input.syntaxError(error, in: bytes)
            throw UsageError(Input.located(message, at: offset, in: bytes))
        }
        guard case .object(let fields) = json else { throw UsageError("expected a JSON object") }
        guard case .string(let id)? = fields["visitorId"], !id.isEmpty else {
            throw UsageError("\"visitorId\" must be a non-empty string" + Self.suggestion(for: "visitorId", among: fields.keys))
        }
        for (name, field) in [("attributes", fields["attributes"]), ("locationProperties", fields["locationProperties"])]
            where field == nil {
            if let hint = Self.misspelling(of: name, among: fields.keys) {
                throw UsageError("\"\(hint)\" is not a field of a visitor line; did you mean \"\(name)\"?")
            }
        }
        visitorId = id
        attributes = try Self.map(fields["attributes"], "attributes")
        locationProperties = try Self.map(fields["locationProperties"], "locationProperties")
    }

    /// ` (the line has "visitor_id"; the field is "visitorId")` when a member looks like a misspelling of `name`.
    private static func suggestion(for name: String, among keys: Dictionary<String, JSONValue>.Keys) -> String {
        misspelling(of: name, among: keys).map { " (the line has \"\($0)\"; the field is \"\(name)\")" } ?? ""
    }

    /// A member name that differs from `name` only in case, `_` or `-` (`visitor_id`, `VisitorID`).
    private static func misspelling(of name: String, among keys: Dictionary<String, JSONValue>.Keys) -> String? {
        func folded(_ text: String) -> String { text.lowercased().filter { $0 != "_" && $0 != "-" } }
        let target = folded(name)
        return keys.sorted().first { $0 != name && folded($0) == target }
    }

    private static func map(_ value: JSONValue?, _ name: String) throws -> [String: JSONValue] {
        switch value {
        case nil, .null?: return [:]
        case .object(let members)?: return members
        default: throw UsageError("\"\(name)\" must be an object")
        }
    }
}
