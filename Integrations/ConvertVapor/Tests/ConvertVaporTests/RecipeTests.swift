import ConvertTesting
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// The package's directory, from this file's place in it.
private let packageDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// The server recipe of the READMEs is `Recipe/main.swift`, compiled as the `VaporRecipe`
/// executable, and it serves the sample config as pasted.
@Suite struct RecipeTests {
    /// The first Swift block after `heading` in the Markdown file at `path`.
    static func snippet(in path: URL, after heading: String) throws -> String {
        let text = try String(contentsOf: path, encoding: .utf8)
        let section = try #require(text.range(of: heading), "\(path.lastPathComponent) has \"\(heading)\"")
        let rest = text[section.upperBound...]
        let open = try #require(rest.range(of: "```swift\n"))
        let close = try #require(rest[open.upperBound...].range(of: "```"))
        return String(rest[open.upperBound..<close.lowerBound])
    }

    @Test func theReadmesRecipeIsTheCompiledOne() throws {
        let recipe = try String(contentsOf: packageDirectory.appendingPathComponent("Recipe/main.swift"), encoding: .utf8)
        let root = packageDirectory.deletingLastPathComponent().deletingLastPathComponent()
        #expect(try Self.snippet(in: root.appendingPathComponent("README.md"), after: "#### Vapor 4, whole") == recipe,
                "README.md's Vapor recipe and Recipe/main.swift differ")
        #expect(try Self.snippet(in: packageDirectory.appendingPathComponent("README.md"), after: "## The whole server") == recipe,
                "the package's README and Recipe/main.swift differ")
    }

    @Test func theRecipeDecidesWithTheSampleConfigAndShutsDownOnSIGTERM() async throws {
        let binary = try #require(BuiltProducts.executable("VaporRecipe"), "the recipe is built with the tests")
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("recipe-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: data) }
        let port = try LoopbackHTTP.freePort()
        let server = try ChildProcess(binary, arguments: ["serve", "--hostname", "127.0.0.1", "--port", "\(port)"], environment: [
            "CONVERT_SDK_KEY": nil, "REDIS_URL": nil,
            "XDG_DATA_HOME": data.path,   // the SDK's files, under the test's directory
            "HOME": data.path,
        ])
        defer { server.stop() }

        let base = "http://127.0.0.1:\(port)"
        let first = try await Self.request("GET", base + "/", waitingForServer: true)
        let setCookie = try #require(first.response.value(forHTTPHeaderField: "Set-Cookie"), "a new visitor gets a cookie")
        #expect(setCookie.hasPrefix("convert_visitor_id="))
        #expect(!setCookie.contains("Secure"))
        let cookie = String(setCookie.prefix { $0 != ";" })
        let lines = first.body.split(separator: "\n").map(String.init)
        let variation = try #require(lines.first)
        #expect(variation.hasPrefix("variation: ") && variation != "variation: none", "the sample config decides: \(lines)")
        #expect(lines.contains { $0.hasPrefix("features: ") && $0.count > "features: ".count })

        let again = try await Self.request("GET", base + "/", cookie: cookie)
        #expect(again.response.value(forHTTPHeaderField: "Set-Cookie") == nil)
        #expect(again.body.split(separator: "\n").first.map(String.init) == variation)
        // Tracking is off without an SDK key: the conversion is recorded for dedup, not sent.
        #expect(try await Self.request("POST", base + "/buy", cookie: cookie).body == "trackingDisabled\n")
        #expect(try await Self.request("POST", base + "/buy", cookie: cookie).body == "duplicate\n")
        let metrics = try await Self.request("GET", base + "/metrics").body
        #expect(metrics.contains("convert_evaluations_total"))
        #expect(metrics.contains("convert_status{status=\"ready\"} 1"))

        let ended = try await server.terminate()   // SIGTERM
        let log = String(decoding: ended.out + ended.err, as: UTF8.self)
        #expect(ended.status == 0, "\(log)")
        #expect(log.components(separatedBy: "shut down").count == 2, "the shutdown report, once: \(log)")
        #expect(!log.contains("error"), "\(log)")
    }

    /// A request's answer, which must be 200 OK; with `waitingForServer`, retried while the
    /// server is not listening yet.
    static func request(_ method: String, _ url: String, cookie: String? = nil, waitingForServer: Bool = false) async throws
        -> (response: HTTPURLResponse, body: String) {
        let answer = try await LoopbackHTTP.request(method, url, cookie: cookie, waitingForServer: waitingForServer)
        #expect(answer.response.statusCode == 200, "\(method) \(url)")
        return answer
    }
}
