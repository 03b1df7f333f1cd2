import ConvertSwiftSDK
import Foundation

/// `convert validate`: whether a config loads, and what decoding gave up, at its place in the file.
enum ValidateCommand {
    static let help = """
    usage: convert validate --config FILE [--strict] [--format text|json]

    Decodes the config as the SDK does (the raw CDN body or {"environment": ..., "data": {...}})
    and prints every degradation, an element dropped or a field ignored or coerced, with its
    JSON path and the line:column in FILE where that value starts; then every problem, what
    the loaded config will do wrong (an audience, location or segment that can never match
    because a rule's match_type is no known operator, an experience that can bucket no visitor,
    a variation that can never be shown because its traffic_allocation is not a number); then
    a summary line.

    Exit status: 0 when the config loads; 1 when the SDK would reject it (the error is printed,
    with the line:column of a JSON syntax error), or, with --strict, when it loads with a
    problem or a degradation (for CI); 2 for a usage error. --format json prints one JSON
    object instead:
      {"file", "loads", "environment", "accountId", "projectId", "counts": {...},
       "degradations": [{"path", "kind", "reason", "offset", "line", "column"}],
       "problems": [{"path", "message", "offset", "line", "column"}],
       "error": null | {"message", "offset", "line", "column"}}
    Lines and columns count from 1 (columns in characters); offsets are bytes from 0.
    """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let args = try Arguments(arguments, options: ["config", "format"], flags: ["strict"])
        let path = try args.required("config")
        let json = try args.choice("format", of: ["text", "json"], default: "text") == "json"
        let bytes = [UInt8](try Input.read(path, for: "config"))
        let file = path == "-" ? "<stdin>" : path
        let report = Report(bytes: bytes)
        if json {
            print(Output.line(report.json(file: file)))
        } else {
            print(report.text(file: file))
        }
        guard report.loads else { return 1 }
        return args.flag("strict") && !report.isClean ? 1 : 0
    }

    /// The outcome of decoding one file, with source positions.
    struct Report {
        /// A failure that stops the config from loading.
        struct Failure {
            let message: String
            let offset: Int?
        }

        private(set) var decoded: DecodedConfig?
        private(set) var failure: Failure?
        private(set) var degradationOffsets: [String: Int] = [:]
        private(set) var problems: [ConfigProblem] = []
        private(set) var positions: [Int: SourcePosition] = [:]

        var loads: Bool { decoded != nil }

        /// Loads with no degradation and no problem.
        var isClean: Bool { loads && problems.isEmpty && decoded?.degradations.isEmpty == true }

        init(bytes: [UInt8]) {
            let map = JSONSourceMap(bytes)
            let json: JSONValue
            do throws(JSONParseError) {
                json = try JSONParser.parse(bytes)
            } catch {
                switch error {
                case .empty: failure = Failure(message: "config is empty", offset: nil)
                case .invalidJSON:
                    let (message, offset) = Input.syntaxError(error, in: bytes)
                    failure = Failure(message: "config is \(message)", offset: offset)
                case .tooDeep(let offset, let limit):
                    failure = Failure(message: "config nests deeper than \(limit) levels", offset: offset)
                }
                positions = map.positions(of: failure?.offset.map { [$0] } ?? [])
                return
            }
            do throws(ConfigDecodingError) {
                decoded = try ConfigDecoder.decode(json: json)
            } catch {
                switch error {
                case .notAnObject: failure = Failure(message: error.description, offset: map.documentStart)
                default: failure = Failure(message: error.description, offset: nil)
                }
                positions = map.positions(of: failure?.offset.map { [$0] } ?? [])
                return
            }
            // Degradation paths are relative to the document the decoder read: `data` when wrapped.
            let wrapped = json.wrappedConfig
            let start = wrapped == nil ? nil : map.offsets(of: ["data"])["data"]
            if let config = decoded?.config {
                problems = ConfigProblems.find(in: config, document: wrapped ?? json)
            }
            let paths = (decoded?.degradations.map(\.path) ?? []) + problems.map(\.path)
            degradationOffsets = map.offsets(of: Set(paths), from: start)
            positions = map.positions(of: degradationOffsets.values)
        }

        private func position(_ offset: Int?) -> SourcePosition? {
            offset.flatMap { positions[$0] }
        }

        func text(file: String) -> String {
            guard let decoded else {
                let at = position(failure?.offset).map { "\(file):\($0)" } ?? file
                return "\(at): error: \(failure?.message ?? "config does not load")"
            }
            var lines: [String] = []
            for degradation in decoded.degradations {
                let at = position(degradationOffsets[degradation.path]).map { "\(file):\($0)" } ?? file
                lines.append("\(at): \(degradation.path.isEmpty ? "(document)" : degradation.path): "
                             + "\(degradation.kind.rawValue): \(degradation.reason)")
            }
            for problem in problems {
                let at = position(degradationOffsets[problem.path]).map { "\(file):\($0)" } ?? file
                lines.append("\(at): \(problem.path): problem: \(problem.message)")
            }
            let config = decoded.config
            let counts = Self.counts(config).map { Self.plural($0.count, $0.noun) }.joined(separator: ", ")
            let environment = decoded.environment.map { ", environment \($0)" } ?? ""
            lines.append("\(file): loads: account \(config.accountId), project \(config.project.id)\(environment); "
                         + "\(counts); \(Self.plural(decoded.degradations.count, "degradation")), "
                         + "\(Self.plural(problems.count, "problem"))")
            return lines.joined(separator: "\n")
        }

        func json(file: String) -> JSONValue {
            var object: [String: JSONValue] = ["file": .string(file), "loads": .bool(loads)]
            if let decoded {
                let config = decoded.config
                object["environment"] = decoded.environment.map(JSONValue.string) ?? .null
                object["accountId"] = .string(config.accountId)
                object["projectId"] = .string(config.project.id)
                object["counts"] = .object(Dictionary(uniqueKeysWithValues: Self.counts(config).map {
                    ($0.key, JSONValue.number(Double($0.count)))
                }))
                object["degradations"] = .array(decoded.degradations.map { degradation in
                    let offset = degradationOffsets[degradation.path]
                    return locate(["path": .string(degradation.path), "kind": .string(degradation.kind.rawValue),
                                   "reason": .string(degradation.reason)], offset)
                })
                object["problems"] = .array(problems.map { problem in
                    locate(["path": .string(problem.path), "message": .string(problem.message)], degradationOffsets[problem.path])
                })
                object["error"] = .null
            } else {
                object["environment"] = .null
                object["accountId"] = .null
                object["projectId"] = .null
                object["counts"] = .null
                object["degradations"] = []
                object["problems"] = []
                object["error"] = locate(["message": .string(failure?.message ?? "config does not load")], failure?.offset)
            }
            return .object(object)
        }

        /// `object` with the offset, line and column of `offset` (`null` when unknown).
        private func locate(_ object: [String: JSONValue], _ offset: Int?) -> JSONValue {
            var object = object
            let position = position(offset)
            object["offset"] = offset.map { .number(Double($0)) } ?? .null
            object["line"] = position.map { .number(Double($0.line)) } ?? .null
            object["column"] = position.map { .number(Double($0.column)) } ?? .null
            return .object(object)
        }

        private static func counts(_ config: ProjectConfig) -> [(key: String, noun: String, count: Int)] {
            [("experiences", "experience", config.experiences.count),
             ("features", "feature", config.features.count),
             ("audiences", "audience", config.audiences.count),
             ("segments", "segment", config.segments.count),
             ("locations", "location", config.locations.count),
             ("goals", "goal", config.goals.count),
             ("archivedExperiences", "archived experience", config.archivedExperienceIds.count)]
        }

        private static func plural(_ count: Int, _ noun: String) -> String {
            "\(count) \(noun)\(count == 1 ? "" : "s")"
        }
    }
}
