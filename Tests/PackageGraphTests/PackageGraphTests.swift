import Foundation
import Testing

/// The package root, from this file's place in it.
private let packageRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// `swift package dump-package` for the package, or `nil` with the reason when it cannot run.
private func dumpedManifest() async -> (Data?, String?) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    // A scratch path of its own: the running `swift test` holds the lock on `.build`.
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("package-graph-\(getpid())")
    process.arguments = ["swift", "package", "--package-path", packageRoot.path, "--scratch-path", scratch.path, "dump-package"]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    // Waited for without holding a thread of the cooperative pool, which the other tests need.
    let data: Data
    do {
        data = try await withCheckedThrowingContinuation { (done: CheckedContinuation<Data, any Error>) in
            do {
                try process.run()
            } catch {
                done.resume(throwing: error)
                return
            }
            Thread {
                let read = output.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                done.resume(returning: read)
            }.start()
        }
    } catch {
        return (nil, "cannot run swift package dump-package: \(error)")
    }
    try? FileManager.default.removeItem(at: scratch)
    guard process.terminationStatus == 0 else { return (nil, "swift package dump-package exited \(process.terminationStatus)") }
    return (data, nil)
}

/// The manifest, read once for the whole suite.
private let manifest = Task { await dumpedManifest() }

/// The package's graph and imports; without a manifest, a plain `swift test` skips (saying why)
/// but CI fails: there the toolchain is known to be present, so a manifest that cannot be read
/// is a broken check.
private func packageOrSkip() async throws -> (PackageGraph, [String: [String: [String]]])? {
    let (data, problem) = await manifest.value
    guard let data else {
        if ProcessInfo.processInfo.environment["CI"] == "true" {
            Issue.record("PackageGraphTests cannot read the manifest in CI: \(problem ?? "unknown reason")")
        } else {
            print("PackageGraphTests skipped: \(problem ?? "")")
        }
        return nil
    }
    let graph = try PackageGraph(manifest: data)
    return (graph, graph.imports(under: packageRoot))
}

@Suite struct PackageGraphTests {
    @Test func everyImportOfAPackageModuleIsADeclaredDependency() async throws {
        guard let (graph, imports) = try await packageOrSkip() else { return }
        #expect(graph.targets.count > 20, "the manifest was read")
        let violations = ImportCheck.violations(graph, imports: imports)
        #expect(violations.isEmpty, "\(violations.map(\.description).joined(separator: "\n"))")
    }

    @Test func anUndeclaredArrowIsCaught() async throws {
        guard let (real, imports) = try await packageOrSkip() else { return }
        // The same graph with Core's arrow to Rules taken away: Core's sources still import Rules.
        let broken = PackageGraph(targets: real.targets.map { target in
            guard target.name == "ConvertCore" else { return target }
            return PackageGraph.Target(name: target.name, kind: target.kind, path: target.path,
                                       dependencies: target.dependencies.subtracting(["ConvertRules"]))
        })
        // What the real graph already has wrong is the other test's to report.
        let caught = Set(ImportCheck.violations(broken, imports: imports))
            .subtracting(ImportCheck.violations(real, imports: imports))
        #expect(!caught.isEmpty)
        #expect(caught.allSatisfy { $0.target == "ConvertCore" && $0.imported == "ConvertRules" })
    }

    @Test func everyTargetHasALayerAndEveryArrowPointsInward() async throws {
        guard let (graph, imports) = try await packageOrSkip() else { return }
        let check = LayerCheck()
        let violations = check.violations(graph, imports: imports)
        #expect(violations.isEmpty, "\(violations.map(\.description).joined(separator: "\n"))")
        let unknown = check.unknownModules(graph)
        #expect(unknown.isEmpty, "Layer.table names modules the manifest has not at Modules/<name>: \(unknown)")
    }

    @Test func theLayerTableOnlyLooksInward() {
        #expect(LayerCheck().tableProblems() == [])
        // A table that lets an inner layer see an outer one is itself rejected.
        let wrong = [Layer(name: "inner", members: .programs, sees: ["outer"], withinLayer: true),
                     Layer(name: "outer", members: .programs, sees: ["inner"], withinLayer: true)]
        #expect(LayerCheck(table: wrong).tableProblems() == ["layer inner sees outer, which is not inside it"])
    }

    /// The checker on a small graph of its own, with the package's table: the arrows the rules
    /// allow pass, and each kind of wrong arrow is caught, declared or only imported.
    @Test func theCheckerRejectsOutwardArrows() {
        func library(_ name: String, in folder: String = "Modules", _ dependencies: Set<String> = []) -> PackageGraph.Target {
            PackageGraph.Target(name: name, path: "\(folder)/\(name)", dependencies: dependencies)
        }
        let graph = PackageGraph(targets: [
            library("ConvertJSON"),
            library("ConvertRules", ["ConvertJSON"]),
            // An engine reaching out to the façade.
            library("ConvertHashing", ["ConvertCore"]),
            // Its sources import the façade without declaring it (see `imports` below).
            library("ConvertStorage", ["ConvertJSON"]),
            // The decision room reaching a port: a decision reading the store.
            library("ConvertDecision", ["ConvertRules", "ConvertStorage"]),
            library("ConvertCore", ["ConvertRules", "ConvertDecision", "ConvertStorage"]),
            library("ConvertMemory", in: "Adapters", ["ConvertStorage"]),
            // An adapter on another adapter, and on the façade.
            library("ConvertSharedStore", in: "Adapters", ["ConvertStorage", "ConvertMemory", "ConvertCore"]),
            library("ConvertSwiftSDK", ["ConvertCore", "ConvertMemory"]),
            // A module the table does not place.
            library("ConvertElsewhere", ["ConvertJSON"]),
            PackageGraph.Target(name: "Example", kind: .executable, path: "Examples/Example",
                                dependencies: ["ConvertSwiftSDK", "ConvertMemory"]),
            PackageGraph.Target(name: "ExampleTests", kind: .test, path: "Tests/ExampleTests",
                                dependencies: ["Example", "ConvertSwiftSDK"]),
        ])
        let imports = ["ConvertStorage": ["ConvertCore": ["Modules/ConvertStorage/Store.swift"]]]
        let violations = LayerCheck().violations(graph, imports: imports)
        #expect(Set(violations.compactMap(\.arrow)) == [
            ["ConvertHashing", "ConvertCore"], ["ConvertStorage", "ConvertCore"], ["ConvertDecision", "ConvertStorage"],
            ["ConvertSharedStore", "ConvertMemory"], ["ConvertSharedStore", "ConvertCore"],
        ])
        #expect(violations.contains(.unplaced(target: "ConvertElsewhere", path: "Modules/ConvertElsewhere")))
        #expect(violations.count == 6, "\(violations.map(\.description).joined(separator: "\n"))")
        #expect(violations.contains { $0.description
            == "ConvertStorage (port) -> ConvertCore (core): points outward [imported in Modules/ConvertStorage/Store.swift]" })
        #expect(violations.contains { $0.description
            == "ConvertDecision (decision) -> ConvertStorage (port): points outward [declared]" })
        #expect(violations.contains { $0.description
            == "ConvertSharedStore (adapter) -> ConvertMemory (adapter): no adapter depends on another [declared]" })
        #expect(violations.contains { $0.description
            == "ConvertSharedStore (adapter) -> ConvertCore (core): layer adapter sees only engine, port [declared]" })
    }

    @Test func importsAreReadInEveryForm() {
        let source = """
        import ConvertRules
        @testable import ConvertCore
        @_exported import ConvertModel
        import struct ConvertStorage.VisitorKey
        public import ConvertEvents
        // import ConvertNotReally
        let imported = "import ConvertNope"
        """
        #expect(PackageGraph.importedModules(source) == ["ConvertRules", "ConvertCore", "ConvertModel", "ConvertStorage", "ConvertEvents"])
    }
}
