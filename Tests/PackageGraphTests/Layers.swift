/// One ring of the package: which targets it holds and which rings inside it they may reach.
struct Layer {
    enum Members {
        /// Library targets at `Modules/<name>`, by name.
        case modules([String])
        /// Library targets whose folder is under this one.
        case libraries(under: String)
        /// Executable and test targets, wherever they live.
        case programs
    }

    let name: String
    let members: Members
    /// The inner layers (earlier in the table) its targets may depend on.
    let sees: [String]
    /// Whether its targets may depend on one another.
    let withinLayer: Bool

    func holds(_ target: PackageGraph.Target) -> Bool {
        switch members {
        case .modules(let names):
            return target.kind == .regular && names.contains(target.name) && target.path == "Modules/\(target.name)"
        case .libraries(let folder):
            return target.kind == .regular && target.path.hasPrefix(folder)
        case .programs:
            return target.kind != .regular
        }
    }
}

extension Layer {
    /// The package's layers, innermost first (Architecture.md, "Dependency rules"). A new
    /// module takes a row here: a target no row holds fails the suite.
    static let table: [Layer] = [
        // Pure engines and the vocabulary and primitives they compute with; depend on one another only.
        Layer(name: "engine",
              members: .modules(["ConvertHashing", "ConvertJSON", "ConvertRules", "ConvertBucketing", "ConvertModel",
                                 "ConvertVisitor", "ConvertTracking", "ConvertEnvironment", "ConvertSynchronization",
                                 "ConvertCookie"]),
              sees: [], withinLayer: true),
        // Deciding: the engine, its input, the installed config and the results. Values only, so
        // that "the engine reads no port" is the compiler's rule.
        Layer(name: "decision", members: .modules(["ConvertDecision"]), sees: ["engine"], withinLayer: false),
        // The storage and transport ports with their values, and the table the bundled stores are built on.
        Layer(name: "port", members: .modules(["ConvertStorage", "ConvertVisitorTable", "ConvertTransport"]),
              sees: ["engine"], withinLayer: true),
        // What runs on the ports: events, the façade, delivery, config loading, the app side. Never an adapter.
        Layer(name: "core", members: .modules(["ConvertEvents", "ConvertCore", "ConvertQueue", "ConvertConfigLoader",
                                               "ConvertAppLifecycle"]),
              sees: ["engine", "decision", "port"], withinLayer: true),
        // Implementations of ports: the ports, engines and vocabulary, and no other adapter.
        Layer(name: "adapter", members: .libraries(under: "Adapters/"), sees: ["engine", "port"], withinLayer: false),
        // The one library that bundles adapters with the façade.
        Layer(name: "umbrella", members: .modules(["ConvertSwiftSDK"]),
              sees: ["engine", "decision", "port", "core", "adapter"], withinLayer: false),
        // The test kit shipped as a product.
        Layer(name: "test kit", members: .libraries(under: "Tests/"),
              sees: ["engine", "decision", "port", "core", "adapter", "umbrella"], withinLayer: false),
        // The benchmarks as a library, for packages that run them with a transport of their own.
        Layer(name: "bench kit", members: .libraries(under: "Examples/Benchmarks/"),
              sees: ["engine", "decision", "port", "core", "adapter", "umbrella", "test kit"], withinLayer: false),
        // The CLI, the examples, the benchmark, the test helpers and the test targets.
        Layer(name: "program", members: .programs,
              sees: ["engine", "decision", "port", "core", "adapter", "umbrella", "test kit", "bench kit"], withinLayer: true),
    ]
}

/// Checks that every arrow of the package — a declared dependency or an import of a package
/// module — stays in its layer (where the layer allows) or points to an inner layer it sees.
struct LayerCheck {
    enum Violation: Hashable, CustomStringConvertible {
        case unplaced(target: String, path: String)
        case placedTwice(target: String, layers: [String])
        case arrow(from: String, fromLayer: String, to: String, toLayer: String, how: String, rule: String)

        var description: String {
            switch self {
            case .unplaced(let target, let path):
                return "\(target) (\(path)) has no place in Layer.table"
            case .placedTwice(let target, let layers):
                return "\(target) is held by several layers: \(layers.joined(separator: ", "))"
            case .arrow(let from, let fromLayer, let to, let toLayer, let how, let rule):
                return "\(from) (\(fromLayer)) -> \(to) (\(toLayer)): \(rule) [\(how)]"
            }
        }

        /// The arrow's ends, for an arrow.
        var arrow: [String]? {
            if case .arrow(let from, _, let to, _, _, _) = self { return [from, to] }
            return nil
        }
    }

    let table: [Layer]

    init(table: [Layer] = Layer.table) {
        self.table = table
    }

    /// Mistakes in the table itself: a layer named twice, or seeing one that is not inside it.
    func tableProblems() -> [String] {
        var problems: [String] = []
        for (index, layer) in table.enumerated() {
            let inner = table[..<index].map(\.name)
            if inner.contains(layer.name) { problems.append("layer \(layer.name) is named twice") }
            for seen in layer.sees where !inner.contains(seen) {
                problems.append("layer \(layer.name) sees \(seen), which is not inside it")
            }
        }
        return problems
    }

    /// Module names in the table that no library target of `graph` has.
    func unknownModules(_ graph: PackageGraph) -> [String] {
        table.flatMap { layer -> [String] in
            guard case .modules(let names) = layer.members else { return [] }
            return names.filter { name in graph.target(named: name).map { !layer.holds($0) } ?? true }
        }
    }

    /// Every target no layer holds or several hold, and every arrow that leaves the rules.
    func violations(_ graph: PackageGraph, imports: [String: [String: [String]]]) -> [Violation] {
        var found: [Violation] = []
        var placed: [String: Int] = [:]
        for target in graph.targets {
            let holders = table.indices.filter { table[$0].holds(target) }
            switch holders.count {
            case 0: found.append(.unplaced(target: target.name, path: target.path))
            case 1: placed[target.name] = holders[0]
            default: found.append(.placedTwice(target: target.name, layers: holders.map { table[$0].name }))
            }
        }
        for target in graph.targets {
            guard let from = placed[target.name] else { continue }
            let imported = imports[target.name] ?? [:]
            let ends = target.dependencies.union(imported.keys).filter { graph.target(named: $0) != nil }
            for end in ends.sorted() {
                guard let to = placed[end] else { continue }  // reported as unplaced
                let rule: String
                if to > from {
                    rule = "points outward"
                } else if to == from {
                    guard !table[from].withinLayer else { continue }
                    rule = "no \(table[from].name) depends on another"
                } else {
                    guard !table[from].sees.contains(table[to].name) else { continue }
                    rule = "layer \(table[from].name) sees only \(table[from].sees.joined(separator: ", "))"
                }
                var how: [String] = []
                if target.dependencies.contains(end) { how.append("declared") }
                if let files = imported[end] { how.append("imported in " + files.joined(separator: ", ")) }
                found.append(.arrow(from: target.name, fromLayer: table[from].name, to: end, toLayer: table[to].name,
                                    how: how.joined(separator: "; "), rule: rule))
            }
        }
        return found
    }
}
