import Foundation
import Testing

private let root = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// Runs `.ci/apple-blocks` in `directory` on `arguments`: its exit status and output, or `nil`
/// without python3.
private func runCheck(in directory: URL, _ arguments: [String] = []) throws -> (Int32, String)? {
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") else { return nil }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
    process.arguments = [root.appendingPathComponent(".ci/apple-blocks").path] + arguments
    process.currentDirectoryURL = directory
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return (process.terminationStatus, text)
}

/// A package of two targets in a fresh temporary directory; `adapter` is the platform file.
private func plantedPackage(adapter: String) throws -> URL {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apple-blocks-\(UUID().uuidString)")
    for (path, text) in [
        ("Package.swift", "// swift-tools-version:6.0\n"),
        ("Modules/Core/Widget.swift", "public struct Widget {}\n"),
        ("Adapters/Apple/Adapter.swift", adapter),
    ] {
        let file = directory.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: file)
    }
    return directory
}

@Suite struct AppleBlocksCheckTests {
    @Test func theTreePasses() throws {
        guard let (status, output) = try runCheck(in: root) else { return }
        #expect(status == 0, "\(output)")
    }

    @Test func anSDKTypeInAnAppleBlockFails() throws {
        let planted = try plantedPackage(adapter: """
            import Core
            #if canImport(UIKit) && !os(watchOS)
            import UIKit
            let widget = Widget()
            #endif
            """)
        defer { try? FileManager.default.removeItem(at: planted) }
        guard let (status, output) = try runCheck(in: planted, ["Modules", "Adapters"]) else { return }
        #expect(status == 1)
        #expect(output.contains("Adapter.swift:4: `Widget`"), "\(output)")
    }

    @Test func aFrameworkTypeWithoutItsImportFails() throws {
        let planted = try plantedPackage(adapter: """
            import Foundation
            func names() -> [Notification.Name] {
                var names: [Notification.Name] = []
                #if canImport(AppKit)
                names = [NSApplication.didHideNotification]
                #endif
                return names
            }
            """)
        defer { try? FileManager.default.removeItem(at: planted) }
        guard let (status, output) = try runCheck(in: planted, ["Modules", "Adapters"]) else { return }
        #expect(status == 1)
        #expect(output.contains("`NSApplication` is AppKit's"), "\(output)")
    }

    @Test func onlyFrameworkCallsInsideTheBlockPass() throws {
        let planted = try plantedPackage(adapter: """
            #if canImport(UIKit)
            import UIKit
            #endif
            import Core
            func names() -> [String] {
                var names: [String] = []
                #if canImport(UIKit)
                names = [UIApplication.didEnterBackgroundNotification.rawValue]
                #else
                _ = Widget()
                #endif
                return names
            }
            """)
        defer { try? FileManager.default.removeItem(at: planted) }
        guard let (status, output) = try runCheck(in: planted, ["Modules", "Adapters"]) else { return }
        #expect(status == 0, "\(output)")
    }
}
