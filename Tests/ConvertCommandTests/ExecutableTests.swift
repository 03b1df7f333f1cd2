import ConvertSwiftSDK
import ConvertSynchronization
import ConvertTesting
import Foundation
import Testing

/// Every executable the package ships.
private let executables = ["convert", "quickstart", "rules-only", "custom-build", "in-memory", "convert-bench"]

/// The SDK version, as the transport stamps it in `User-Agent` (this target does not import
/// the transport module that defines it): what every `--version` must print.
private func agentVersion() async throws -> String {
    let server = try LoopbackHTTPServer { _ in .respond(status: 200, body: Data("{}".utf8)) }
    _ = try await convert(["fetch", "--sdk-key", "k1", "--endpoint", server.baseURL])
    let agent = try #require(server.requests.first?.header("User-Agent"))
    #expect(agent.hasPrefix("ConvertAgent/"))
    return String(agent.dropFirst("ConvertAgent/".count))
}

@Suite struct ExecutableTests {
    @Test func everyExecutablePrintsTheSDKVersion() async throws {
        let version = try await agentVersion()
        for name in executables {
            let result = try await runProduct(name, ["--version"])
            #expect(result.status == 0, "\(name)")
            #expect(result.out == "\(name) \(version)\n", "\(name)")
        }
    }

    @Test(arguments: executables)
    func helpIsUsageAndSuccess(name: String) async throws {
        let result = try await runProduct(name, ["--help"])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.hasPrefix("usage: \(name)"))
        #expect(result.err.isEmpty)
    }

    @Test(arguments: executables)
    func unknownOptionsAreUsageErrors(name: String) async throws {
        // convert-bench takes its options after the command; convert after a command too.
        let arguments = name == "convert-bench" ? ["decode", "--frobnicate", "1"] : ["--frobnicate"]
        let result = try await runProduct(name, arguments)
        #expect(result.status == 2)
        #expect(result.err.hasPrefix("\(name): unknown option --frobnicate"), "\(result.err)")
        #expect(result.out.isEmpty)
    }

    @Test func quickstartHelpNoLongerAsksForAValue() async throws {
        let result = try await runProduct("quickstart", ["--visitors", "5", "--help"])
        #expect(result.status == 0)
        #expect(result.out.contains("--send"))
        #expect(result.out.contains("CONVERT_SDK_KEY_SECRET"))
        let offline = try await runProduct("quickstart", ["--send"])
        #expect(offline.status == 2)
        #expect(offline.err.contains("--send needs --sdk-key"))
    }
}

@Suite struct SecretTests {
    @Test func fetchReadsTheSecretFromTheEnvironmentAndTheFlagWins() async throws {
        let config = try Fixtures.data(.staticConfig)
        let server = try LoopbackHTTPServer { _ in .respond(status: 200, body: config) }
        let fromEnvironment = try await convert(["fetch", "--sdk-key", "k1", "--endpoint", server.baseURL],
                                          environment: ["CONVERT_SDK_KEY_SECRET": "env-s3cret"])
        #expect(fromEnvironment.status == 0, "\(fromEnvironment.err)")
        #expect(server.requests.last?.header("Authorization") == "Bearer env-s3cret")
        #expect(!fromEnvironment.out.contains("env-s3cret") && !fromEnvironment.err.contains("env-s3cret"))

        let flag = try await convert(["fetch", "--sdk-key", "k1", "--endpoint", server.baseURL, "--sdk-key-secret", "flag-s3cret"],
                               environment: ["CONVERT_SDK_KEY_SECRET": "env-s3cret"])
        #expect(flag.status == 0)
        #expect(server.requests.last?.header("Authorization") == "Bearer flag-s3cret")

        let none = try await convert(["fetch", "--sdk-key", "k1", "--endpoint", server.baseURL])
        #expect(none.status == 0)
        #expect(server.requests.last?.header("Authorization") == nil)

        let legacy = try await convert(["fetch", "--sdk-key", "k1", "--endpoint", server.baseURL, "--secret", "old-s3cret"])
        #expect(legacy.status == 0)
        #expect(server.requests.last?.header("Authorization") == "Bearer old-s3cret")
        #expect(legacy.err.contains("warning: fetch --secret is deprecated"))
        #expect(!legacy.err.contains("old-s3cret"))

        server.setHandler { _ in .respond(status: 401) }
        let refused = try await convert(["fetch", "--sdk-key", "k1", "--endpoint", server.baseURL],
                                  environment: ["CONVERT_SDK_KEY_SECRET": "env-s3cret"])
        #expect(refused.status == 1)
        #expect(!refused.out.contains("env-s3cret") && !refused.err.contains("env-s3cret"))
        let help = try await convert(["fetch", "--help"])
        #expect(help.out.contains("CONVERT_SDK_KEY_SECRET"))
    }
}

/// A child process whose output is read line by line while its input stays open.
private final class InteractiveProcess {
    private let process = Process()
    private let input = Pipe()
    private let received = Locked(Data())

    init(_ name: String, _ arguments: [String]) throws {
        let binary: URL = try #require(BuiltProducts.executable(name), "the \(name) binary is built with the tests")
        process.executableURL = binary
        process.arguments = arguments
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        // A thread of its own, off the dispatch pool the waiting test occupies (see `runProduct`).
        Thread { [received] in
            while true {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                received.withValue { $0.append(chunk) }
            }
        }.start()
    }

    func write(_ line: String) {
        input.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    /// The next whole output line, or `nil` if none arrives within `timeout`. Polls, so the
    /// waiting test holds no thread of the cooperative pool (see `Process.outcome`).
    func nextLine(timeout: Duration = .patience) async -> String? {
        let deadline = ContinuousClock.now + timeout
        while true {
            let line: Data? = received.withValue { data in
                guard let newline = data.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
                let line = data[data.startIndex..<newline]
                data = Data(data[(newline + 1)...])
                return Data(line)
            }
            if let line { return String(decoding: line, as: UTF8.self) }
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Closes the input and waits for the exit status, polling.
    func finish() async -> Int32 {
        try? input.fileHandleForWriting.close()
        while process.isRunning { try? await Task.sleep(for: .milliseconds(5)) }
        return process.terminationStatus
    }

    func kill() {
        if process.isRunning { process.terminate() }
    }
}

@Suite struct DecideStreamingTests {
    @Test func eachLineIsAnsweredBeforeTheNextIsWritten() async throws {
        let child = try InteractiveProcess("convert", ["decide", "--config", try Fixtures.url(.cdnConfigBaseline).path])
        defer { child.kill() }
        child.write(#"{"visitorId": "first", "locationProperties": {"location": "pricing"}}"#)
        let first = try #require(await child.nextLine(), "the first result arrives while the input is still open")
        #expect(try JSONDecoder().decode(JSONValue.self, from: Data(first.utf8))["visitorId"] == "first")
        child.write(#"{"visitorId": "second"}"#)
        let second = try #require(await child.nextLine())
        #expect(try JSONDecoder().decode(JSONValue.self, from: Data(second.utf8))["visitorId"] == "second")
        #expect(await child.finish() == 0)
    }

    @Test func theTableAlignsOneColumnPerExperience() async throws {
        let config = try Fixtures.url(.cdnConfigBaseline).path
        let input = Data("""
        {"visitorId": "v1", "attributes": {"mobile": true}, "locationProperties": {"location": "pricing"}}
        {"visitorId": "a-longer-visitor-id", "locationProperties": {"location": "pricing"}}
        {"visitorId": "v3"}
        """.utf8)
        let table = try await convert(["decide", "--config", config, "--format", "table"], input: input)
        #expect(table.status == 0, "\(table.err)")
        let json = try await convert(["decide", "--config", config], input: input)
        let decisions = try json.out.split(separator: "\n").map { try JSONDecoder().decode(JSONValue.self, from: Data($0.utf8)) }

        let lines = table.out.split(separator: "\n").map(String.init)
        #expect(lines.count == 4)
        let header = lines[0]
        let keys = header.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        #expect(keys.first == "visitor")
        let experienceKeys = Array(keys.dropFirst().prefix(4))
        let featureKeys = Array(keys.dropFirst(5))
        #expect(experienceKeys == ["test-experience-ab-fullstack-1", "test-experience-ab-fullstack-3", "sample_ab_test",
                                   "test-experience-ab-fullstack-4"])
        #expect(featureKeys.count == 6, "a column per feature after the experiences: \(keys)")
        let starts = keys.map { key in header.distance(from: header.startIndex, to: header.range(of: key)!.lowerBound) }
        var bucketed = 0, enabledFeatures = 0
        for (line, decision) in zip(lines.dropFirst(), decisions) {
            #expect(!line.hasSuffix(" "))
            // Every cell starts where its header does.
            let cells = starts.map { start in
                String(line.dropFirst(start).prefix { $0 != " " })
            }
            #expect(cells[0] == decision["visitorId"]?.stringValue)
            for (key, cell) in zip(experienceKeys, cells.dropFirst()) {
                let expected = decision["experiences"]?[key]?.stringValue ?? "-"
                #expect(cell == expected, "\(key)")
                if expected != "-" { bucketed += 1 }
            }
            for (key, cell) in zip(featureKeys, cells.dropFirst(5)) {
                let enabled = decision["features"]?[key]?["status"]?.stringValue == "enabled"
                #expect(cell == (enabled ? "on" : "off"), "\(key)")
                if enabled { enabledFeatures += 1 }
            }
        }
        #expect(bucketed > 0, "some cells show a variation")
        #expect(enabledFeatures > 0, "some cells show a feature on")
    }

    @Test func inputNamesTheFileAndVisitorsIsADeprecatedAlias() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("decide-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("visitors.jsonl")
        try Data("{\"visitorId\": \"f1\"}\r\n{\"visitorId\": \"f2\"}".utf8).write(to: file)
        let config = try Fixtures.url(.cdnConfigBaseline).path

        let named = try await convert(["decide", "--config", config, "--input", file.path])
        #expect(named.status == 0)
        #expect(named.err.isEmpty)
        let ids = try named.out.split(separator: "\n").map { try JSONDecoder().decode(JSONValue.self, from: Data($0.utf8))["visitorId"] }
        #expect(ids == ["f1", "f2"], "a CRLF line and a last line without a newline are both read")

        let legacy = try await convert(["decide", "--config", config, "--visitors", file.path])
        #expect(legacy.status == 0)
        #expect(legacy.out == named.out)
        #expect(legacy.err == "convert: warning: decide --visitors FILE is deprecated; use --input FILE\n")
    }
}

@Suite struct QuickstartTrackingTests {
    /// A loopback Convert: the baseline config for any key, 200 for tracking.
    private func project() throws -> LoopbackHTTPServer {
        let config = try Fixtures.data(.cdnConfigBaseline)
        return try LoopbackHTTPServer { request in
            request.path.hasPrefix("/config/") ? .respond(status: 200, body: config) : .respond(status: 200)
        }
    }

    @Test func withAKeyNothingIsTrackedUnlessAskedFor() async throws {
        let server = try project()
        let result = try await runProduct("quickstart", ["--sdk-key", "k1", "--visitors", "6", "--endpoint", server.baseURL],
                                    environment: ["CONVERT_SDK_KEY_SECRET": "qs-s3cret"])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains("Tracking: not sent"))
        #expect(result.out.contains("--send"))
        #expect(!result.out.contains("qs-s3cret") && !result.err.contains("qs-s3cret"))
        #expect(server.requests.map(\.method) == ["GET"], "the config fetch only")
        #expect(server.requests.first?.header("Authorization") == "Bearer qs-s3cret")
    }

    @Test func sendTracksAndSaysWhatItSent() async throws {
        let server = try project()
        let result = try await runProduct("quickstart", ["--sdk-key", "k1", "--visitors", "6", "--endpoint", server.baseURL, "--send"])
        #expect(result.status == 0, "\(result.err)")
        var bucketing = 0, conversions = 0, transactions = 0
        for request in server.requests where request.method == "POST" {
            #expect(request.path == "/track/k1")
            let batch = try JSONDecoder().decode(TrackingBatch.self, from: request.body)
            for event in batch.visitors.flatMap(\.events) {
                switch event {
                case .bucketing: bucketing += 1
                case .conversion(_, let goalData, _):
                    conversions += 1
                    if goalData != nil { transactions += 1 }
                }
            }
        }
        #expect(bucketing > 0)
        // Visitors 0 and 3 convert with an amount: a conversion event and a transaction event each.
        #expect(conversions == 4)
        #expect(transactions == 2)
        #expect(result.out.contains("Tracking: sent to project 10034190 (account 10035569): "
                                    + "\(bucketing) bucketing and \(conversions) conversion events; "), "\(result.out)")
        #expect(result.out.contains("left pending 0"))
    }
}
