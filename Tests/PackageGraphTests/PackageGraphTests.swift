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

/// The manifest; without one, a plain `swift test` skips (saying why) but CI fails: there the
/// toolchain is known to be present, so a manifest that cannot be read is a broken check.
private func manifestOrSkip(_ manifest: Data?, _ problem: String?) throws -> Data? {
    if let manifest { return manifest }
    if ProcessInfo.processInfo.environment["CI"] == "true" {
        Issue.record("PackageGraphTests cannot read the manifest in CI: \(problem ?? "unknown reason")")
        return nil
    }
    print("PackageGraphTests skipped: \(problem ?? "")")
    return nil
}

@Suite struct PackageGraphTests {
    @Test func everyImportOfAPackageModuleIsADeclaredDependency() async throws {
        let (manifest, problem) = await dumpedManifest()
        guard let manifest = try manifestOrSkip(manifest, problem) else { return }
        let check = try ImportCheck(root: packageRoot, manifest: manifest)
        #expect(check.targets.count > 20, "the manifest was read")
        let violations = check.violations()
        #expect(violations.isEmpty, "\(violations.map(\.description).joined(separator: "\n"))")
    }

    @Test func anUndeclaredArrowIsCaught() async throws {
        let (manifest, problem) = await dumpedManifest()
        guard let manifest = try manifestOrSkip(manifest, problem) else { return }
        let real = try ImportCheck(root: packageRoot, manifest: manifest)
        // The same graph with Core's arrow to Rules taken away: Core's sources still import Rules.
        let broken = ImportCheck(root: packageRoot, targets: real.targets.map { target in
            guard target.name == "ConvertCore" else { return target }
            return ImportCheck.Target(name: target.name, path: target.path,
                                      dependencies: target.dependencies.subtracting(["ConvertRules"]))
        })
        let caught = broken.violations()
        #expect(!caught.isEmpty)
        #expect(caught.allSatisfy { $0.target == "ConvertCore" && $0.imported == "ConvertRules" })
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
        #expect(ImportCheck.importedModules(source) == ["ConvertRules", "ConvertCore", "ConvertModel", "ConvertStorage", "ConvertEvents"])
    }
}
