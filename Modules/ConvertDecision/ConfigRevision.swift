import ConvertJSON
import Foundation

/// A config's revision: a 64-bit FNV-1a fingerprint of its document (the config inside a
/// `{"environment", "data"}` wrapper) written with sorted keys, without the serving timestamp
/// `_s_t`; the same as `convert generate` writes.
package enum ConfigRevision {
    /// The revision of config bytes; of the bytes themselves when they are not JSON.
    package static func of(bytes: Data) -> String {
        guard let document = try? JSONParser.parse(bytes) else { return fnv1a(bytes) }
        return of(document: document)
    }

    /// The revision of a config document (or of one inside a `{"environment", "data"}` wrapper).
    package static func of(document: JSONValue) -> String {
        var document = document
        if case .object(let top) = document, top["account_id"] == nil, let data = top["data"], case .object = data {
            document = data
        }
        if case .object(var members) = document {
            members["_s_t"] = nil
            document = .object(members)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return fnv1a((try? encoder.encode(document)) ?? Data("null".utf8))
    }

    private static func fnv1a(_ bytes: Data) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
