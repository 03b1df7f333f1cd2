import ConvertSwiftSDK
import ConvertTesting
import Foundation
import Testing

/// The package's root directory, from this file's place in it.
private let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

@Suite struct ReadmeSnippetTests {
    @Test func theReadmeSnippetIsTheCompiledExample() throws {
        let readme = try String(contentsOf: packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try #require(readme.range(of: "## Using the SDK"), "README has a \"Using the SDK\" section")
        let rest = readme[section.upperBound...]
        let open = try #require(rest.range(of: "```swift\n"))
        let close = try #require(rest[open.upperBound...].range(of: "```"))
        let snippet = String(rest[open.upperBound..<close.lowerBound])
        let example = try String(contentsOf: packageRoot.appendingPathComponent("Examples/ReadmeSnippet/main.swift"), encoding: .utf8)
        // The example's first lines handle its options; the rest is the snippet.
        let prologue = try #require(example.range(of: "ExampleOptions.handle()\n"), "the example handles its options first")
        #expect(String(example[prologue.upperBound...]) == snippet, "README's snippet and Examples/ReadmeSnippet/main.swift differ")
    }

    @Test func theReadmeSnippetTakesOnlyHelpAndVersion() async throws {
        let version = try await runSnippet(["--version"])
        #expect(version.status == 0)
        #expect(version.out.hasPrefix("readme-snippet ") && version.out.hasSuffix("\n") && !version.out.contains("show"))
        let help = try await runSnippet(["--help"])
        #expect(help.status == 0 && help.out.hasPrefix("usage: readme-snippet"))
        let unknown = try await runSnippet(["--frobnicate"])
        #expect(unknown.status == 2)
        #expect(unknown.err.hasPrefix("readme-snippet: unknown option --frobnicate"))
        #expect(unknown.out.isEmpty, "nothing of the snippet runs")
    }

    private func runSnippet(_ arguments: [String], in directory: URL = FileManager.default.temporaryDirectory) async throws
        -> (status: Int32, out: String, err: String) {
        let binary = try #require(BuiltProducts.executable("ReadmeSnippet") ?? BuiltProducts.executable("readme-snippet"),
                                  "the README example is built with the tests")
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.currentDirectoryURL = directory
        let outcome = try await process.outcome()
        return (outcome.status, String(decoding: outcome.out, as: UTF8.self), String(decoding: outcome.err, as: UTF8.self))
    }

    @Test func theReadmeSnippetRunsAsPastedOffline() async throws {
        // From a directory outside the package: the snippet needs no file of this repository.
        let outside = FileManager.default.temporaryDirectory.appendingPathComponent("readme-snippet-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: outside) }
        let (status, out, err) = try await runSnippet([], in: outside)
        #expect(status == 0, "\(err)")
        let lines = out.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("show 100314255") == true, "the visitor is bucketed: \(lines)")
        #expect(lines.contains { $0.hasPrefix("bucketed visitor-42 → 100314255") }, "the bucketing event arrives: \(lines)")
        #expect(lines.contains("price 100.0"))
        #expect(lines.contains(#"["feature-1", "feature-2"]"#))
        #expect(lines.contains { $0.hasPrefix("environmentMismatch") }, "the explanation names the failing check")
        #expect(lines.contains("trackingDisabled"))
        #expect(err.isEmpty, "nothing is logged as a warning or error: \(err)")
    }
}

@Suite struct PrivacyManifestTests {
    @Test func thePrivacyManifestDeclaresFileTimestampsAndNoTracking() throws {
        let url = packageRoot.appendingPathComponent("Modules/ConvertSwiftSDK/PrivacyInfo.xcprivacy")
        let plist = try PropertyListSerialization.propertyList(from: Data(contentsOf: url), format: nil)
        let manifest = try #require(plist as? [String: Any])
        #expect(manifest["NSPrivacyTracking"] as? Bool == false)
        #expect((manifest["NSPrivacyTrackingDomains"] as? [Any])?.isEmpty == true)
        let accessed = try #require(manifest["NSPrivacyAccessedAPITypes"] as? [[String: Any]])
        let timestamps = accessed.first { $0["NSPrivacyAccessedAPIType"] as? String == "NSPrivacyAccessedAPICategoryFileTimestamp" }
        #expect((timestamps?["NSPrivacyAccessedAPITypeReasons"] as? [String])?.isEmpty == false)
        let collected = try #require(manifest["NSPrivacyCollectedDataTypes"] as? [[String: Any]])
        #expect(collected.allSatisfy { $0["NSPrivacyCollectedDataTypeTracking"] as? Bool == false })
    }
}
