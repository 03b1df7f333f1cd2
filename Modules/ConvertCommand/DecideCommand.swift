import ConvertSwiftSDK
import Foundation

/// `convert decide`: every experience and feature for each visitor of a JSON-lines input.
enum DecideCommand {
    static let help = """
    usage: convert decide --config FILE [--visitors FILE|-] [--environment ENV]

    Decides every experience and feature of the config for each visitor, offline (no network,
    no tracking). The config may be the raw CDN body or {"environment": ..., "data": {...}}.

    Input (--visitors, standard input by default): one JSON object per line,
      {"visitorId": "...", "attributes": {...}, "locationProperties": {...}}
    Output: one JSON object per visitor,
      {"visitorId": "...", "experiences": {"<key>": "<variationKey>" | null, ...},
       "features": {"<key>": {"status": "enabled" | "disabled", "variables": {...}}, ...}}
    A malformed line is reported on standard error with its number; the others are still
    decided, and the exit status is 1.
    """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let args = try Arguments(arguments, options: ["config", "visitors", "environment"], flags: [])
        let sdk = try await Input.offlineSDK(configPath: try args.required("config"), environment: args.value("environment"))
        let input = try Input.read(args.value("visitors") ?? "-", for: "visitors")
        var failed = false
        var lineNumber = 0
        for rawLine in input.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            lineNumber += 1
            let line = rawLine.last == UInt8(ascii: "\r") ? rawLine.dropLast() : rawLine
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            do {
                let visitor = try VisitorLine(Array(line))
                print(Output.line(await decide(visitor, sdk)))
            } catch let error as UsageError {
                failed = true
                Output.error("line \(lineNumber): \(error.description)")
            }
        }
        return failed ? 1 : 0
    }

    static func decide(_ visitor: VisitorLine, _ sdk: ConvertSwiftSDK) async -> JSONValue {
        let context = sdk.createContext(visitorId: visitor.visitorId, attributes: visitor.attributes)
        context.setLocationProperties(visitor.locationProperties)
        var experiences: [String: JSONValue] = [:]
        for experience in sdk.config?.experiences ?? [] {
            let variation = await context.runExperience(experience.key)
            experiences[experience.key] = variation.map { .string($0.key ?? $0.id) } ?? .null
        }
        var features: [String: JSONValue] = [:]
        for feature in await context.runFeatures() {
            features[feature.key] = ["status": .string(feature.status.rawValue), "variables": .object(feature.variables)]
        }
        return ["visitorId": .string(visitor.visitorId), "experiences": .object(experiences), "features": .object(features)]
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
            switch error {
            case .invalidJSON(let offset, let reason): throw UsageError("not valid JSON: \(reason) at byte \(offset)")
            case .tooDeep(_, let limit): throw UsageError("JSON nests deeper than \(limit) levels")
            default: throw UsageError("expected a JSON object")
            }
        }
        guard case .object(let fields) = json else { throw UsageError("expected a JSON object") }
        guard case .string(let id)? = fields["visitorId"], !id.isEmpty else {
            throw UsageError("\"visitorId\" must be a non-empty string")
        }
        visitorId = id
        attributes = try Self.map(fields["attributes"], "attributes")
        locationProperties = try Self.map(fields["locationProperties"], "locationProperties")
    }

    private static func map(_ value: JSONValue?, _ name: String) throws -> [String: JSONValue] {
        switch value {
        case nil, .null?: return [:]
        case .object(let members)?: return members
        default: throw UsageError("\"\(name)\" must be an object")
        }
    }
}
