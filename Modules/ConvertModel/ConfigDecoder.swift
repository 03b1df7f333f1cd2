import ConvertJSON
import ConvertRules
import Foundation

/// A decoded config, with the environment named by a wrapped document.
public struct DecodedConfig: Sendable {
    /// The config, indexed for decisions.
    public let config: ProjectConfig
    /// `environment` from a `{"environment": ..., "data": {...}}` wrapper; `nil` for a bare document.
    public let environment: String?

    /// What decoding gave up (the same list as ``ProjectConfig/degradations``).
    public var degradations: [ConfigDegradation] { config.degradations }
}

/// Reads Convert config documents, tolerating the drift real configs show.
///
/// One bad element (an experience that is not an object, a variation without an id) is dropped
/// and reported; unknown keys, unknown enum strings, ids as numbers and `null` sub-trees are
/// accepted silently. Only input that is not a JSON object, or lacks `account_id`/`project.id`,
/// throws.
///
/// ```swift
/// let decoded = try ConfigDecoder.decode(Data(contentsOf: url))
/// print(decoded.config.experiences.count, decoded.degradations)
/// ```
public enum ConfigDecoder {
    /// Decoding choices.
    public struct Options: Sendable {
        /// Accept documents without `account_id` or `project.id` (fragments used in tests and
        /// tools); they get empty identities.
        public var allowsMissingIdentity: Bool

        /// Options; by default a document without its identity is refused.
        public init(allowsMissingIdentity: Bool = false) {
            self.allowsMissingIdentity = allowsMissingIdentity
        }
    }

    /// Decodes config bytes: a bare CDN body or `{"environment": ..., "data": {...}}`.
    public static func decode(_ data: Data, options: Options = Options()) throws(ConfigDecodingError) -> DecodedConfig {
        try decode(bytes: [UInt8](data), options: options)
    }

    /// Decodes config bytes held in an array.
    package static func decode(bytes: [UInt8], options: Options = Options()) throws(ConfigDecodingError) -> DecodedConfig {
        // Read from the parsed document in place: only what the config keeps becomes JSONValues.
        try bytes.withUnsafeBufferPointer { buffer throws(ConfigDecodingError) -> DecodedConfig in
            let tape: JSONTape
            do throws(JSONParseError) {
                tape = try JSONTape(parsing: buffer)
            } catch {
                throw ConfigDecodingError(error)
            }
            return try tape.withRoot(bytes: buffer) { root throws(ConfigDecodingError) in
                try decode(document: root, options: options)
            }
        }
    }

    /// Decodes an already parsed document.
    package static func decode(json: JSONValue, options: Options = Options()) throws(ConfigDecodingError) -> DecodedConfig {
        try decode(document: json, options: options)
    }

    private static func decode<Value: ConfigValue>(document top: Value, options: Options)
        throws(ConfigDecodingError) -> DecodedConfig {
        guard top.jsonKind == .object else { throw .notAnObject(found: top.kindName) }
        var document = top
        var environment: String?
        if top.member("account_id") == nil, let data = top.member("data"), data.jsonKind == .object {
            document = data
            environment = top.member("environment")?.stringValue
        }
        return DecodedConfig(config: try ProjectConfig(document: document, options: options), environment: environment)
    }
}

extension ProjectConfig {
    init<Value: ConfigValue>(document: Value, options: ConfigDecoder.Options) throws(ConfigDecodingError) {
        guard let f = Fields(document, location: .root()) else { throw .notAnObject(found: document.kindName) }
        var log = DegradationLog()
        let accountId = f.identifier("account_id")
        let projectFields = f.object("project", &log)
        let projectId = projectFields?.identifier("id")
        if !options.allowsMissingIdentity {
            guard accountId != nil else { throw .missingIdentity("account_id") }
            guard projectId != nil else { throw .missingIdentity("project.id") }
        }
        let project = Project(
            id: projectId ?? "",
            name: projectFields?.string("name", &log),
            type: projectFields?.string("type", &log),
            utcOffset: projectFields?.number("utc_offset", &log),
            settings: projectFields?.raw("settings"))
        let experiences = f.elements("experiences", &log) { Experience.decode($0, &$1) }
        let audiences = f.elements("audiences", &log) { Audience.decode($0, &$1) }
        let segments = f.elements("segments", &log) { Segment.decode($0, &$1) }
        let locations = f.elements("locations", &log) { Location.decode($0, &$1) }
        let goals = f.elements("goals", &log) { Goal.decode($0, &$1) }
        let features = f.elements("features", &log) { Feature.decode($0, &$1) }
        let archived = f.identifiers("archived_experiences", &log)
        self.init(accountId: accountId ?? "", project: project, experiences: experiences, audiences: audiences,
                  segments: segments, locations: locations, goals: goals, features: features,
                  archivedExperienceIds: Set(archived), degradations: log.entries)
    }
}

extension ProjectConfig: Decodable {
    /// Decodes through any `Decoder` with the same tolerance as ``ConfigDecoder``.
    public init(from decoder: any Decoder) throws {
        let json = try JSONValue(from: decoder)
        do {
            self = try ConfigDecoder.decode(json: json).config
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.description,
                                                    underlyingError: error))
        }
    }
}
