import ConvertTesting
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
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
        let port = try Self.freePort()
        let process = Process()
        process.executableURL = binary
        process.arguments = ["serve", "--hostname", "127.0.0.1", "--port", "\(port)"]
        var environment = ProcessInfo.processInfo.environment
        for key in ["CONVERT_SDK_KEY", "REDIS_HOST", "REDIS_PORT"] { environment[key] = nil }
        environment["XDG_DATA_HOME"] = data.path   // the SDK's files, under the test's directory
        environment["HOME"] = data.path
        process.environment = environment
        let outcome = Task { try await process.outcome() }
        defer { if process.isRunning { process.terminate() } }

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

        process.terminate()   // SIGTERM
        let ended = try await outcome.value
        let log = String(decoding: ended.out + ended.err, as: UTF8.self)
        #expect(ended.status == 0, "\(log)")
        #expect(log.components(separatedBy: "shut down").count == 2, "the shutdown report, once: \(log)")
        #expect(!log.contains("error"), "\(log)")
    }

    /// A request's answer; with `waitingForServer`, retried while the server is not listening yet.
    static func request(_ method: String, _ url: String, cookie: String? = nil, waitingForServer: Bool = false) async throws
        -> (response: HTTPURLResponse, body: String) {
        var request = URLRequest(url: try #require(URL(string: url)))
        request.httpMethod = method
        request.httpShouldHandleCookies = false
        if let cookie { request.setValue(cookie, forHTTPHeaderField: "Cookie") }
        let session = URLSession(configuration: .ephemeral)
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            do {
                let (body, response) = try await session.data(for: request)
                let http = try #require(response as? HTTPURLResponse)
                #expect(http.statusCode == 200, "\(method) \(url)")
                return (http, String(decoding: body, as: UTF8.self))
            } catch let error as URLError where waitingForServer && ContinuousClock.now < deadline {
                _ = error
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    /// A loopback port nothing listens on now.
    static func freePort() throws -> Int {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        try #require(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        try #require(bound)
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
