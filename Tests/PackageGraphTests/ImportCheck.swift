import Foundation

/// The package's targets as the manifest declares them, and the package modules their sources
/// import.
struct PackageGraph {
    struct Target {
        /// `regular` (a library module), `executable` or `test`, as `dump-package` says.
        enum Kind: String { case regular, executable, test }

        let name: String
        let kind: Kind
        let path: String
        let dependencies: Set<String>

        init(name: String, kind: Kind = .regular, path: String, dependencies: Set<String>) {
            self.name = name
            self.kind = kind
            self.path = path
            self.dependencies = dependencies
        }

        /// The name `import` uses (executables: `convert-bench` is imported as `convert_bench`).
        var moduleName: String { name.replacingOccurrences(of: "-", with: "_") }
    }

    let targets: [Target]

    /// Reads the targets of a `swift package dump-package` document.
    init(manifest: Data) throws {
        guard let json = try JSONSerialization.jsonObject(with: manifest) as? [String: Any],
              let targets = json["targets"] as? [[String: Any]]
        else { throw CocoaError(.coderReadCorrupt) }
        self.targets = try targets.map { target in
            guard let name = target["name"] as? String,
                  let kind = (target["type"] as? String).flatMap(Target.Kind.init(rawValue:))
            else { throw CocoaError(.coderReadCorrupt) }
            var dependencies = Set<String>()
            for dependency in target["dependencies"] as? [[String: Any]] ?? [] {
                for (_, value) in dependency {
                    if let first = (value as? [Any])?.first as? String { dependencies.insert(first) }
                }
            }
            let path = target["path"] as? String ?? (kind == .test ? "Tests/\(name)" : "Sources/\(name)")
            return Target(name: name, kind: kind, path: path, dependencies: dependencies)
        }
    }

    init(targets: [Target]) {
        self.targets = targets
    }

    func target(named name: String) -> Target? { targets.first { $0.name == name } }

    /// For each target, the package targets its Swift files under `root` import, with the files
    /// (relative to `root`) that import each; a target's import of itself is left out.
    func imports(under root: URL) -> [String: [String: [String]]] {
        var moduleToTarget: [String: String] = [:]
        for target in targets { moduleToTarget[target.moduleName] = target.name }
        var found: [String: [String: [String]]] = [:]
        for target in targets {
            for file in Self.swiftFiles(in: root.appendingPathComponent(target.path)) {
                guard let text = try? String(contentsOf: file, encoding: .utf8) else { continue }
                let relative = file.path.replacingOccurrences(of: root.path + "/", with: "")
                for module in Self.importedModules(text) {
                    guard let imported = moduleToTarget[module], imported != target.name else { continue }
                    found[target.name, default: [:]][imported, default: []].append(relative)
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
        return walker.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }.sorted { $0.path < $1.path }
    }
}

/// Finds imports of the package's own modules that a target does not declare as dependencies.
///
/// SwiftPM builds such an import whenever the module happens to be built first (it comes in
/// through another dependency), so an undeclared arrow compiles until the graph changes.
enum ImportCheck {
    struct Violation: Hashable, CustomStringConvertible {
        let target: String
        let imported: String
        let file: String

        var description: String { "\(target) imports \(imported) without declaring it (\(file))" }
    }

    /// Every import of a package module that its target does not declare.
    static func violations(_ graph: PackageGraph, imports: [String: [String: [String]]]) -> [Violation] {
        graph.targets.flatMap { target in
            (imports[target.name] ?? [:]).sorted { $0.key < $1.key }.flatMap { imported, files in
                target.dependencies.contains(imported) ? []
                    : files.map { Violation(target: target.name, imported: imported, file: $0) }
            }
        }
    }
}
