import Foundation

/// Finds imports of the package's own modules that a target does not declare as dependencies.
///
/// SwiftPM builds such an import whenever the module happens to be built first (it comes in
/// through another dependency), so an undeclared arrow compiles until the graph changes.
struct ImportCheck {
    struct Target {
        let name: String
        let path: String
        let dependencies: Set<String>
    }

    struct Violation: Hashable, CustomStringConvertible {
        let target: String
        let imported: String
        let file: String

        var description: String { "\(target) imports \(imported) without declaring it (\(file))" }
    }

    let root: URL
    let targets: [Target]

    /// Reads the targets of a `swift package dump-package` document.
    init(root: URL, manifest: Data) throws {
        self.root = root
        guard let json = try JSONSerialization.jsonObject(with: manifest) as? [String: Any],
              let targets = json["targets"] as? [[String: Any]]
        else { throw CocoaError(.coderReadCorrupt) }
        self.targets = targets.compactMap { target in
            guard let name = target["name"] as? String else { return nil }
            var dependencies = Set<String>()
            for dependency in target["dependencies"] as? [[String: Any]] ?? [] {
                for (_, value) in dependency {
                    if let first = (value as? [Any])?.first as? String { dependencies.insert(first) }
                }
            }
            return Target(name: name, path: target["path"] as? String ?? "Sources/\(name)", dependencies: dependencies)
        }
    }

    init(root: URL, targets: [Target]) {
        self.root = root
        self.targets = targets
    }

    /// Every import of a package module that its target does not declare.
    func violations() -> [Violation] {
        // Executable targets are imported under their C99 name ("convert-bench" as convert_bench).
        var moduleToTarget: [String: String] = [:]
        for target in targets { moduleToTarget[target.name.replacingOccurrences(of: "-", with: "_")] = target.name }
        var found: [Violation] = []
        for target in targets {
            let directory = root.appendingPathComponent(target.path)
            for file in Self.swiftFiles(in: directory) {
                guard let text = try? String(contentsOf: file, encoding: .utf8) else { continue }
                for module in Self.importedModules(text) {
                    guard let imported = moduleToTarget[module], imported != target.name,
                          !target.dependencies.contains(imported)
                    else { continue }
                    let relative = file.path.replacingOccurrences(of: root.path + "/", with: "")
                    found.append(Violation(target: target.name, imported: imported, file: relative))
                }
            }
        }
        return found
    }

    /// Modules named by `import` declarations (attributes and kinds such as `struct` allowed).
    static func importedModules(_ source: String) -> [String] {
        let kinds: Set<Substring> = ["struct", "class", "enum", "protocol", "typealias", "func", "var", "let", "actor"]
        var modules: [String] = []
        var inMultilineString = false
        for line in source.split(separator: "\n") {
            if line.components(separatedBy: "\"\"\"").count % 2 == 0 {
                inMultilineString.toggle()
                continue
            }
            if inMultilineString { continue }
            var words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })[...]
            while let first = words.first, first.hasPrefix("@") || first == "public" || first == "package"
                    || first == "internal" || first == "private" || first == "fileprivate" {
                words = words.dropFirst()
            }
            guard words.first == "import", words.count >= 2 else { continue }
            words = words.dropFirst()
            if let kind = words.first, kinds.contains(kind) { words = words.dropFirst() }
            guard let name = words.first?.split(separator: ".").first else { continue }
            modules.append(String(name))
        }
        return modules
    }

    private static func swiftFiles(in directory: URL) -> [URL] {
        guard let walker = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil) else { return [] }
        return walker.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
    }
}
