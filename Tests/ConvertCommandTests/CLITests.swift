import ConvertBucketing
import ConvertSwiftSDK
import ConvertTesting
import Foundation
import Testing

/// Runs the built `convert` binary.
func convert(_ arguments: [String], input: Data? = nil,
             environment: [String: String] = [:]) async throws -> (status: Int32, out: String, err: String) {
    try await runProduct("convert", arguments, input: input, environment: environment)
}

/// Runs one of the package's built executables with `input` on standard input, in the test's
/// environment plus `environment` (without `CONVERT_SDK_KEY_SECRET`, unless given, so the
/// machine's own setting never leaks in), and waits for it to exit.
func runProduct(_ name: String, _ arguments: [String], input: Data? = nil,
                environment: [String: String] = [:]) async throws -> (status: Int32, out: String, err: String) {
    let binary = try #require(BuiltProducts.executable(name), "the \(name) binary is built with the tests")
    let process = Process()
    process.executableURL = binary
    process.arguments = arguments
    var variables = ProcessInfo.processInfo.environment
    variables["CONVERT_SDK_KEY_SECRET"] = nil
    process.environment = variables.merging(environment) { _, given in given }
    let outcome = try await process.outcome(input: input ?? Data())
    return (outcome.status, String(decoding: outcome.out, as: UTF8.self), String(decoding: outcome.err, as: UTF8.self))
}


private func fixturePath(_ file: Fixtures.File) throws -> String { try Fixtures.url(file).path }

/// 1,000 visitors with attributes and locations that reach every gate of the fixtures.
private func visitorLines(_ count: Int) -> [JSONValue] {
    (0..<count).map { i -> JSONValue in
        let attributes: JSONValue = [
            "desktop": i % 3 == 0 ? "true" : "false", "browser": i % 2 == 0 ? "FF" : "CH", "mobile": .bool(i % 5 == 0),
            "varName1": "value1", "varName2": i % 2 == 0 ? "value2" : "x", "varName3": i % 7 == 0 ? "something" : "other",
        ]
        let locations: [JSONValue] = [["location": "pricing"], ["location": "events"], ["url": "https://convert.com/"],
                                      ["screen": "home"], ["feature": .number(Double(i % 9))]]
        return ["visitorId": .string("cli-visitor-\(i)"), "attributes": attributes, "locationProperties": locations[i % 5]]
    }
}

@Suite(.serialized) struct CLITests {
    @Test(arguments: Fixtures.File.configs)
    func decideEqualsTheLibrarysOwnDecisions(file: Fixtures.File) async throws {
        let visitors = visitorLines(300)
        let input = Data(visitors.map { line -> String in
            let data = try! JSONEncoder().encode(line)
            return String(decoding: data, as: UTF8.self)
        }.joined(separator: "\n").utf8)
        let result = try await convert(["decide", "--config", try fixturePath(file)], input: input)
        #expect(result.status == 0, "\(result.err)")
        let lines = result.out.split(separator: "\n")
        #expect(lines.count == visitors.count)

        let sdk = ConvertSwiftSDK(configData: try Fixtures.data(file),
                                  configuration: ConvertConfiguration(sdkKey: "", networkTracking: false, persistence: .memory),
                                  logSink: SilentLogSink())
        try await sdk.ready()
        let config = try #require(sdk.config)
        var bucketedSomewhere = 0
        for (line, visitor) in zip(lines, visitors) {
            let output = try JSONDecoder().decode(JSONValue.self, from: Data(line.utf8))
            let context = sdk.createContext(visitorId: visitor["visitorId"]!.stringValue!, attributes: visitor["attributes"]!.objectValue!)
            context.setLocationProperties(visitor["locationProperties"]!.objectValue!)
            #expect(output["visitorId"] == visitor["visitorId"])
            #expect(output["experiences"]?.objectValue?.count == config.experiences.count)
            for experience in config.experiences {
                let expected = await context.runExperience(experience.key).map { JSONValue.string($0.key ?? $0.id) } ?? .null
                #expect(output["experiences"]?[experience.key] == expected)
                if expected != .null { bucketedSomewhere += 1 }
            }
            for feature in await context.runFeatures() {
                #expect(output["features"]?[feature.key]?["status"] == .string(feature.status.rawValue))
                #expect(output["features"]?[feature.key]?["variables"] == .object(feature.variables))
            }
        }
        #expect(bucketedSomewhere > 0, "the inputs reach real decisions")
    }

    @Test func malformedLinesAreReportedAndTheRestDecided() async throws {
        let input = Data("""
        {"visitorId": "a"}
        {"visitorId": 5}
        not json at all

        {"visitorId": "b", "attributes": "nope"}
        {"visitorId": "c", "locationProperties": {"location": "pricing"}}
        """.utf8)
        let result = try await convert(["decide", "--config", try fixturePath(.cdnConfigBaseline)], input: input)
        #expect(result.status == 1)
        #expect(result.out.split(separator: "\n").count == 2)
        #expect(result.err.contains("line 2: \"visitorId\" must be a non-empty string"))
        #expect(result.err.contains("line 3, column 1: not valid JSON"))
        #expect(result.err.contains("line 5: \"attributes\" must be an object"))
        #expect(!result.err.contains("line 4"))
    }

    @Test func wrappedConfigAndEnvironment() async throws {
        let line = Data(#"{"visitorId": "w1", "attributes": {"varName3": "something"}, "locationProperties": {"url": "https://convert.com/"}}"#.utf8)
        let result = try await convert(["decide", "--config", try fixturePath(.jsSDKTestConfig), "--environment", "live"], input: line)
        #expect(result.status == 0)
        let output = try JSONDecoder().decode(JSONValue.self, from: Data(result.out.utf8))
        #expect(output["experiences"]?["test-experience-ab-fullstack-2"] != .null)
    }

    @Test func explainNamesTheDecidingRule() async throws {
        let result = try await convert(["explain", "--config", try fixturePath(.cdnConfigBaseline), "--visitor", "v1",
                                  "--attributes", #"{"desktop": "true", "browser": "CH"}"#,
                                  "--location", #"{"location": "pricing"}"#, "--experience", "test-experience-ab-fullstack-1"])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains("location pricing-location (id 1003352): match; deciding rule OR[0].AND[0].OR_WHEN[0]"))
        #expect(result.out.contains("audience adv-audience (id 10033684, permanent): no match; deciding rule OR[1].AND[0].OR_WHEN[0] [generic_bool_key_value] mobile equals true"))
        #expect(result.out.contains("result: audienceNotMatched -> no variation"))

        let json = try await convert(["explain", "--config", try fixturePath(.cdnConfigBaseline), "--visitor", "v1",
                                "--attributes", #"{"mobile": true}"#, "--location", #"{"location": "pricing"}"#,
                                "--feature", "feature-1", "--json"])
        #expect(json.status == 0)
        let output = try JSONDecoder().decode(JSONValue.self, from: Data(json.out.utf8))
        let decisions = try #require(output["decisions"]?.arrayValue)
        #expect(decisions.map { $0["experienceKey"] } == ["test-experience-ab-fullstack-1", "test-experience-ab-fullstack-4"])
        #expect(decisions[0]["reason"] == "bucketed")
        let audience = try #require(decisions[0]["steps"]?.arrayValue?.first { $0["check"] == "audience" })
        #expect(audience["decidingRule"] == "OR[1].AND[0].OR_WHEN[0]")
        #expect(output["feature"]?["status"] == "enabled")
    }

    @Test func simulateReportsTheShareBucketingPredicts() async throws {
        let original = try #require(try JSONSerialization.jsonObject(with: Fixtures.data(.cdnConfigBaseline)) as? [String: Any])
        var raised = original
        var experiences = try #require(raised["experiences"] as? [[String: Any]])
        var variations = try #require(experiences[0]["variations"] as? [[String: Any]])
        variations[0]["traffic_allocation"] = 20.0
        variations[1]["traffic_allocation"] = 30.0
        experiences[0]["variations"] = variations
        raised["experiences"] = experiences
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let after = directory.appendingPathComponent("after.json")
        try JSONSerialization.data(withJSONObject: raised).write(to: after)

        let result = try await convert(["simulate", "--config", try fixturePath(.cdnConfigBaseline), "--after", after.path,
                                  "--visitors", "4000", "--json"])
        #expect(result.status == 0, "\(result.err)")
        let output = try JSONDecoder().decode(JSONValue.self, from: Data(result.out.utf8))
        let rows = try #require(output["experiences"]?.arrayValue)
        let changedRow = try #require(rows.first { $0["experienceKey"] == "test-experience-ab-fullstack-1" })
        let before = BucketTable(arms: [BucketArm(id: "1003142550", trafficAllocation: 50), BucketArm(id: "1003142551", trafficAllocation: 50)],
                                 layout: .packed)
        let later = BucketTable(arms: [BucketArm(id: "1003142550", trafficAllocation: 20), BucketArm(id: "1003142551", trafficAllocation: 30)],
                                layout: .packed)
        var expected = 0
        for i in 0..<4000 {
            let value = BucketValue.of(experienceId: "100334665", visitorId: "simulated-visitor-\(i)")
            if before.variation(forValue: value) != later.variation(forValue: value) { expected += 1 }
        }
        #expect(changedRow["changed"] == .number(Double(expected)))
        #expect(changedRow["changedShare"] == .number(Double(expected) / 4000))
        #expect(expected > 1500, "about 62% move when arms shrink to 20/30")
        for row in rows where row["experienceKey"] != "test-experience-ab-fullstack-1" {
            #expect(row["changed"] == 0)
        }
        let text = try await convert(["simulate", "--config", try fixturePath(.cdnConfigBaseline), "--after", after.path, "--visitors", "4000"])
        #expect(text.out.contains("test-experience-ab-fullstack-1: \(expected) of 4000 visitors change variation"))
    }

    @Test(arguments: ["decide", "explain", "simulate", "validate", "fetch"])
    func everyCommandHasHelp(command: String) async throws {
        let result = try await convert([command, "--help"])
        #expect(result.status == 0)
        #expect(result.out.hasPrefix("usage: convert \(command)"))
    }

    @Test func errorsNameTheBadArgument() async throws {
        let config = try fixturePath(.cdnConfigBaseline)
        let cases: [([String], String)] = [
            (["decide"], "--config is required"),
            (["decide", "--config", "/no/such/file"], "--config: cannot read /no/such/file"),
            (["decide", "--config", config, "--wat", "1"], "unknown option --wat"),
            (["explain", "--config", config, "--visitor", "v"], "give exactly one of --experience and --feature"),
            (["explain", "--config", config, "--visitor", "v", "--experience", "nope"], "--experience: no experience has the key \"nope\""),
            (["explain", "--config", config, "--visitor", "v", "--feature", "f", "--attributes", "[1]"], "--attributes must be a JSON object"),
            (["simulate", "--config", config, "--after", config, "--visitors", "-3"], "--visitors must be a positive whole number"),
            (["fetch"], "--sdk-key is required"),
            (["validate"], "--config is required"),
            (["validate", "--config", config, "--format", "yaml"], "--format must be one of text, json, got \"yaml\""),
            (["decide", "--config", config, "--format", "csv"], "--format must be one of json, table, got \"csv\""),
            (["decide", "--config", config, "--input", "/no/such/visitors"], "--input: cannot read /no/such/visitors"),
            (["--wat"], "unknown option --wat"),
            (["frobnicate"], "unknown command \"frobnicate\""),
        ]
        for (arguments, message) in cases {
            let result = try await convert(arguments)
            #expect(result.status == 2, "\(arguments)")
            #expect(result.err.contains(message), "\(arguments): \(result.err)")
        }
        let invalid = try await convert(["decide", "--config", try fixturePath(.hashParityVectors)], input: Data())
        #expect(invalid.status == 2)
        #expect(invalid.err.contains("config must be a JSON object, found an array"))
    }

    @Test func fetchPrintsTheServedConfig() async throws {
        let config = try Fixtures.data(.staticConfig)
        let server = try LoopbackHTTPServer { _ in .respond(status: 200, body: config) }
        let result = try await convert(["fetch", "--sdk-key", "k1", "--environment", "staging", "--endpoint", server.baseURL])
        #expect(result.status == 0, "\(result.err)")
        #expect(Data(result.out.utf8).prefix(config.count) == config)
        #expect(server.requests.first?.path == "/config/k1")
        #expect(server.requests.first?.queryValue("environment") == "staging")
        server.setHandler { _ in .respond(status: 500) }
        let failed = try await convert(["fetch", "--sdk-key", "k1", "--endpoint", server.baseURL])
        #expect(failed.status == 1)
        #expect(failed.err.contains("fetch failed: HTTP 500"))
    }
}
