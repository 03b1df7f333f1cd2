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
        let source = SwiftKeysFile(config: decoded.config, revision: ConfigRevision.of(document: json), typeName: name, access: access).render()

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
