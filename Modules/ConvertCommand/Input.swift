import ConvertSwiftSDK
import Foundation

/// Reading files and JSON arguments, with errors that name what was wrong.
enum Input {
    static func read(_ path: String, for option: String) throws -> Data {
        if path == "-" { return FileHandle.standardInput.readDataToEndOfFile() }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw UsageError("--\(option): cannot read \(path)")
        }
        return data
    }

    /// A JSON object given on the command line, as rule data.
    static func object(_ text: String?, for option: String) throws -> [String: JSONValue] {
        guard let text else { return [:] }
        let json: JSONValue
        do throws(JSONParseError) {
            json = try JSONParser.parse(Array(text.utf8))
        } catch {
            throw UsageError("--\(option) is not valid JSON: \(error.description)")
        }
        guard case .object(let members) = json else { throw UsageError("--\(option) must be a JSON object") }
        return members
    }

    /// An SDK over a config file (raw CDN body or `{"environment", "data"}`), offline: no network, no tracking.
    static func offlineSDK(configPath: String, environment: String?) async throws -> ConvertSwiftSDK {
        let data = try read(configPath, for: "config")
        let configuration = ConvertConfiguration(sdkKey: "", environment: environment, networkTracking: false,
                                                 logLevel: .error, visitorStoreCapacity: 1_000_000, persistence: .memory)
        let sdk = ConvertSwiftSDK(configData: data, configuration: configuration, logSink: SilentLogSink())
        do {
            try await sdk.ready()
        } catch let error as ConvertError {
            throw UsageError("--config \(configPath): \(error.description)")
        }
        return sdk
    }
}

/// Writes JSON values deterministically (sorted keys, one line).
enum Output {
    static func line(_ value: JSONValue) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(value)) ?? Data("null".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    static func error(_ message: String) {
        FileHandle.standardError.write(Data("convert: \(message)\n".utf8))
    }
}
