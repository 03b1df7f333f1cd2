import ConvertStorage
import Foundation

/// Blobs as files in one directory: atomic replacement, owner-only permissions.
///
/// ```swift
/// let store = try FileByteStore(directory: FileStorage.defaultDirectory(for: "my-sdk-key"))
/// ```
public struct FileByteStore: ByteStore {
    /// The directory blobs are files in (mode 0700).
    public let directory: URL

    /// Uses `directory`, creating it (owner-only) when missing.
    public init(directory: URL) throws {
        try POSIXFile.ensureDirectory(directory)
        self.directory = directory
    }

    /// The file that holds the blob `name` (the name made safe for a file name).
    package func url(for name: String) -> URL {
        directory.appendingPathComponent(FileStorage.safeName(name))
    }

    public func read(_ name: String) throws -> Data? { try POSIXFile.read(url(for: name)) }
    public func write(_ data: Data, to name: String) throws { try POSIXFile.atomicWrite(data, to: url(for: name)) }
    public func remove(_ name: String) throws { try POSIXFile.remove(url(for: name)) }

    /// Moves a blob that could not be used aside (`<name>.corrupt-<time>`), keeping it for inspection.
    @discardableResult
    package func quarantine(_ name: String) -> String { POSIXFile.quarantine(url(for: name)) }
}

/// Where file storage lives by default, and name hygiene.
public enum FileStorage {
    /// The default directory for one SDK key: Application Support on Apple platforms,
    /// `$XDG_DATA_HOME` (or `~/.local/share`) elsewhere, then `convert-swift-sdk/<key>`.
    public static func defaultDirectory(for sdkKey: String) -> URL {
        let base: URL
        #if canImport(Darwin)
        base = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? FileManager.default.temporaryDirectory
        #else
        if let xdg = ProcessInfo.processInfo.environment["XDG_DATA_HOME"], !xdg.isEmpty {
            base = URL(fileURLWithPath: xdg)
        } else {
            base = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/share")
        }
        #endif
        return base.appendingPathComponent("convert-swift-sdk").appendingPathComponent(safeName(sdkKey.isEmpty ? "default" : sdkKey))
    }

    /// `name` with every character outside `[A-Za-z0-9._-]` replaced by `_`, never starting with a dot.
    package static func safeName(_ name: String) -> String {
        var out = String(name.unicodeScalars.map { scalar -> Character in
            let ok = (scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar))) || scalar == "." || scalar == "-" || scalar == "_"
            return ok ? Character(scalar) : "_"
        })
        if out.hasPrefix(".") { out = "_" + out.dropFirst() }
        return out.isEmpty ? "_" : String(out.prefix(120))
    }

    /// The permission bits of a file (for checks such as "is it 0600?").
    package static func permissions(of url: URL) -> Int? { POSIXFile.permissions(url.path) }
}
