import ConvertCore
import ConvertModel
import Foundation

/// The real configs and cross-SDK vectors of the testing kit.
///
/// ```swift
/// let data = try Fixtures.data(.cdnConfigBaseline)
/// let config = try Fixtures.config(.cdnConfigBaseline)
/// ```
public enum Fixtures {
    /// A fixture file.
    public enum File: String, Sendable, CaseIterable {
        /// A real CDN capture: 4 experiences, 1 audience, 1 segment, 5 locations, 3 goals, 6 features.
        /// It is the SDK's built-in `ConvertSwiftSDK.sampleConfig`, not a file of the kit;
        /// ``Fixtures/url(_:)`` writes it to a temporary file, removed when the process exits.
        case cdnConfigBaseline = "cdn-config-baseline.json"
        /// 74 MurmurHash3 vectors.
        case hashParityVectors = "hash-parity-vectors.json"
        /// 59 packed and anchored bucketing cases.
        case crossSDKBucketingVectors = "cross-sdk-bucketing-vectors.json"
        /// The JS SDK's test config, wrapped as `{environment, data}`.
        case jsSDKTestConfig = "js-sdk-test-config.json"
        /// The JS rules package's test config, wrapped.
        case rulesTestConfig = "rules-test-config.json"
        /// A CDN-shaped config with 2 experiences.
        case staticConfig = "static-config.json"
        /// The mutual-exclusion rule contract: a config fragment and 8 rows.
        case mutualExclusionRules = "mutual-exclusion-rule-fixture.json"

        /// The files that hold a whole project config.
        public static let configs: [File] = [.cdnConfigBaseline, .jsSDKTestConfig, .rulesTestConfig, .staticConfig]
    }

    /// Errors reading a fixture.
    public enum LoadError: Error, CustomStringConvertible {
        /// The named file is not among the kit's resources, or could not be written out.
        case missing(String)

        public var description: String {
            switch self {
            case .missing(let name): return "fixture \(name) is not available from the testing kit"
            }
        }
    }

    /// The URL of a fixture file.
    public static func url(_ file: File) throws -> URL {
        if file == .cdnConfigBaseline {
            guard let url = WrittenSampleConfig.url else { throw LoadError.missing(file.rawValue) }
            return url
        }
        guard let url = Bundle.module.url(forResource: file.rawValue, withExtension: nil, subdirectory: "Fixtures") else {
            throw LoadError.missing(file.rawValue)
        }
        return url
    }

    /// The bytes of a fixture file.
    public static func data(_ file: File) throws -> Data {
        if file == .cdnConfigBaseline { return ConvertSwiftSDK.sampleConfig }
        return try Data(contentsOf: url(file))
    }

    /// A fixture decoded with `JSONDecoder`.
    public static func decode<T: Decodable>(_ type: T.Type, from file: File) throws -> T {
        try JSONDecoder().decode(type, from: data(file))
    }

    /// A config fixture decoded by ``ConfigDecoder``.
    public static func config(_ file: File) throws -> ProjectConfig {
        try ConfigDecoder.decode(data(file)).config
    }

    /// The CDN baseline with its first experience's traffic split changed to `weights` (one per
    /// variation, in order): a traffic change, for tests of sticky decisions across configs.
    public static func baselineReallocated(_ weights: [Double]) throws -> Data {
        guard var root = try JSONSerialization.jsonObject(with: data(.cdnConfigBaseline)) as? [String: Any],
              var experiences = root["experiences"] as? [[String: Any]], !experiences.isEmpty,
              var variations = experiences[0]["variations"] as? [[String: Any]], variations.count >= weights.count
        else { throw LoadError.missing("an experience with \(weights.count) variations in the baseline") }
        for (i, weight) in weights.enumerated() { variations[i]["traffic_allocation"] = weight }
        experiences[0]["variations"] = variations
        root["experiences"] = experiences
        return try JSONSerialization.data(withJSONObject: root)
    }
}

/// The SDK's sample config as a file, for what needs a path (a command line's `--config`):
/// written once per process into a temporary directory of its own, removed at exit.
private enum WrittenSampleConfig {
    static let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("convert-testing-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString)")

    /// The file; `nil` when it could not be written.
    static let url: URL? = {
        let file = directory.appendingPathComponent(Fixtures.File.cdnConfigBaseline.rawValue)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try ConvertSwiftSDK.sampleConfig.write(to: file, options: .atomic)
        } catch {
            return nil
        }
        atexit { try? FileManager.default.removeItem(at: WrittenSampleConfig.directory) }
        return file
    }()
}
