import ConvertTesting
import Foundation
import Testing

/// The network paths keep nothing in the user's home directory: no cookie a host sets, no cached
/// response. Foundation reads HOME once per process, so the paths run in a child process (the
/// JournalProbe helper's "network" mode) whose HOME is an empty temporary directory.
@Suite struct HomeDirectoryTests {
    #if !canImport(Darwin)
    @Test func aConfigFetchAndATrackingPostWriteNothingUnderHome() async throws {
        let probe = try #require(BuiltProducts.executable("JournalProbe"), "the JournalProbe helper is built with the tests")
        let home = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: home) }
        let config = try Fixtures.data(.cdnConfigBaseline)
        // Every answer sets a persistent cookie and allows caching for an hour.
        let keep = ["Set-Cookie": "cdn=edge-7; Path=/; Max-Age=3600", "Cache-Control": "public, max-age=3600"]
        let server = try LoopbackHTTPServer { request in
            request.method == "GET"
                ? .respond(status: 200, headers: keep.merging(["Content-Type": "application/json"]) { $1 }, body: config)
                : .respond(status: 200, headers: keep)
        }
        let process = Process()
        process.executableURL = probe
        process.arguments = ["network", server.baseURL]
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = home.path
        for name in ["XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"] { environment[name] = nil }
        process.environment = environment
        let outcome = try await process.outcome()
        let out = String(decoding: outcome.out, as: UTF8.self)
        #expect(outcome.status == 0, "the probe ran both paths: \(out)\(String(decoding: outcome.err, as: UTF8.self))")
        #expect(out == "config fresh\nconfig fresh\ntracking sent 1\n")

        let requests = server.requests
        #expect(requests.map(\.method) == ["GET", "GET", "POST"])
        #expect(requests.allSatisfy { $0.header("Cookie") == nil }, "the cookie set by the first answer is never sent back")

        // Nothing was written: no file at all. Foundation on Linux creates the empty directories
        // of its shared cookie storage and URL cache when a process makes its first session
        // configuration, whatever the settings; those, and only those, may be there.
        let written = try Self.entries(under: home)
        #expect(written.filter { !$0.isDirectory }.map(\.path).isEmpty, "files written under HOME")
        let foundationDirectories = Self.pathsLeadingTo(".local/share/\(probe.deletingLastPathComponent().lastPathComponent)")
            .union(Self.pathsLeadingTo(".cache/org.swift.foundation.URLCache/\(probe.lastPathComponent)"))
        let others = written.filter { $0.isDirectory && !foundationDirectories.contains($0.path) }.map(\.path)
        #expect(others.isEmpty, "directories other than Foundation's own under HOME")
    }
    #endif

    /// Every entry under `root`, as paths relative to it.
    private static func entries(under root: URL) throws -> [(path: String, isDirectory: Bool)] {
        var found: [(path: String, isDirectory: Bool)] = []
        var pending = [""]
        while let relative = pending.popLast() {
            let directory = relative.isEmpty ? root.path : root.path + "/" + relative
            for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
                let path = relative.isEmpty ? name : relative + "/" + name
                let type = try FileManager.default.attributesOfItem(atPath: root.path + "/" + path)[.type] as? FileAttributeType
                let isDirectory = type == .typeDirectory
                found.append((path, isDirectory))
                if isDirectory { pending.append(path) }
            }
        }
        return found
    }

    /// `path` and each of its ancestors, relative paths: "a/b/c" gives "a", "a/b", "a/b/c".
    private static func pathsLeadingTo(_ path: String) -> Set<String> {
        let parts = path.split(separator: "/")
        return Set((1...parts.count).map { parts.prefix($0).joined(separator: "/") })
    }
}
