import ConvertSwiftSDK
import ConvertTesting
import Foundation
import Testing

/// `swiftc` on the search path, or `nil` (the type-checking tests then say so and pass).
private let swiftc: URL? = {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
    return path.split(separator: ":").map { URL(fileURLWithPath: String($0)).appendingPathComponent("swiftc") }
        .first { FileManager.default.isExecutableFile(atPath: $0.path) }
}()

/// Runs `swiftc` with `arguments`; the status and what it printed.
private func runSwiftc(_ compiler: URL, _ arguments: [String]) async throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = compiler
    process.arguments = arguments
    let outcome = try await process.outcome()
    return (outcome.status, String(decoding: outcome.out + outcome.err, as: UTF8.self))
}

/// Type-checks `files` together in Swift 6 mode with warnings as errors; `false` when no swiftc.
private func typeCheck(_ files: [URL]) async throws -> Bool {
    guard let compiler = swiftc else {
        print("GenerateTests: swiftc is not on PATH; the generated source is not type-checked")
        return false
    }
    let result = try await runSwiftc(compiler, ["-typecheck", "-swift-version", "6", "-warnings-as-errors"] + files.map(\.path))
    #expect(result.status == 0, "swiftc -typecheck: \(result.output)")
    return true
}

private func temporaryDirectory() throws -> URL {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("generate-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}

private func generate(_ arguments: [String]) async throws -> String {
    let result = try await convert(["generate", "swift"] + arguments)
    #expect(result.status == 0, "\(arguments): \(result.err)")
    return result.out
}

/// A fixture's JSON document with `change` applied, written to `directory`.
private func variant(of file: Fixtures.File, in directory: URL, named name: String,
                     _ change: (inout [String: JSONValue]) -> Void) throws -> String {
    guard case .object(var top) = try JSONDecoder().decode(JSONValue.self, from: Fixtures.data(file)) else {
        throw RuntimeFailure("fixture is not an object")
    }
    change(&top)
    let url = directory.appendingPathComponent(name)
    try JSONEncoder().encode(JSONValue.object(top)).write(to: url)
    return url.path
}

private struct RuntimeFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

@Suite(.serialized) struct GenerateTests {
    @Test(arguments: Fixtures.File.configs)
    func theFileTypeChecksAloneAndIsTheSameEachTime(file: Fixtures.File) async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = try Fixtures.url(file).path
        let first = try await generate(["--config", path])
        let second = try await generate(["--config", path])
        #expect(first == second)
        #expect(!first.isEmpty)
        let imports = first.split(separator: "\n").filter { $0.hasPrefix("import ") }
        #expect(imports == ["import Foundation"])

        let output = directory.appendingPathComponent("Keys.swift")
        _ = try await generate(["--config", path, "--output", output.path])
        #expect(try String(contentsOf: output, encoding: .utf8) == first, "--output writes what standard output shows")
        _ = try await typeCheck([output])

        let config = try Fixtures.config(file)
        #expect(first.contains("project \(config.project.id), account \(config.accountId)"))
        for experience in config.experiences {
            #expect(first.contains("ExperienceKey(rawValue: \"\(experience.key)\")"))
        }
        for goal in config.goals {
            #expect(first.contains("GoalKey(rawValue: \"\(goal.key)\")"))
        }
    }

    @Test func namesFollowTheKeys() async throws {
        let source = try await generate(["--config", try Fixtures.url(.cdnConfigBaseline).path])
        #expect(source.hasPrefix("// Convert keys of project \"FS-Test-Proj - DO NOT DELETE\" (project 10034190, account 10035569),\n"
                                 + "// config revision "))
        for line in [
            "public enum TestExperienceAbFullstack1 {",
            "public static let key = ConvertKeys.ExperienceKey(rawValue: \"test-experience-ab-fullstack-1\")",
            "public static let _1003142550OriginalPage = ConvertKeys.VariationKey(rawValue: \"1003142550-original-page\")",
            "public static let variationA = ConvertKeys.VariationKey(rawValue: \"variation_a\")",
            "public enum Feature2 {",
            "public static let buttonHeight = ConvertKeys.VariableKey(rawValue: \"button-height\")",
            "public let buttonHeight: Swift.Int?",
            "public let price: Swift.Double?",
            "public let additionalData: ConvertKeys.JSON?",
            "case buttonHeight = \"button-height\"",
            "public let border: Swift.Bool?",
            "case border = \"Border\"",
            "public static let decreaseBounceRate = ConvertKeys.GoalKey(rawValue: \"decrease-bounce-rate\")",
        ] {
            #expect(source.contains(line), "\(line)")
        }
        // Sorted by key, whatever the config's order.
        let experienceOrder = ["sample_ab_test", "test-experience-ab-fullstack-1", "test-experience-ab-fullstack-3",
                               "test-experience-ab-fullstack-4"].compactMap { source.range(of: "enum \(SwiftNameProbe.type($0)) {")?.lowerBound }
        #expect(experienceOrder.count == 4)
        #expect(experienceOrder == experienceOrder.sorted())

        let internalSource = try await generate(["--config", try Fixtures.url(.cdnConfigBaseline).path, "--access", "internal",
                                           "--name", "ShopKeys"])
        #expect(internalSource.contains("internal enum ShopKeys {"))
        #expect(!internalSource.contains("public "))
    }

    @Test func theServingTimestampLeavesTheFileAsItWasAndContentChangesTheRevision() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let original = try await generate(["--config", try Fixtures.url(.cdnConfigBaseline).path])
        let restamped = try variant(of: .cdnConfigBaseline, in: directory, named: "restamped.json") { $0["_s_t"] = "2031-01-01 00:00:00" }
        await #expect(try generate(["--config", restamped]) == original)

        let reordered = try variant(of: .cdnConfigBaseline, in: directory, named: "reordered.json") {
            $0["experiences"] = .array(($0["experiences"]?.arrayValue ?? []).reversed())
        }
        let other = try await generate(["--config", reordered])
        #expect(other != original, "another content, another revision")
        let body = { (text: String) in text.split(separator: "\n").filter { !$0.contains("revision") } }
        #expect(body(other) == body(original), "entries are sorted, not in config order")
    }

    @Test func outputIsLeftUntouchedWhenTheContentIsTheSame() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = directory.appendingPathComponent("Keys.swift")
        let config = try Fixtures.url(.staticConfig).path
        _ = try await generate(["--config", config, "--output", output.path])
        let past = Date(timeIntervalSince1970: 1_000_000_000)
        try FileManager.default.setAttributes([.modificationDate: past], ofItemAtPath: output.path)
        _ = try await generate(["--config", config, "--output", output.path])
        let date = try FileManager.default.attributesOfItem(atPath: output.path)[.modificationDate] as? Date
        #expect(date == past)
        _ = try await generate(["--config", try Fixtures.url(.jsSDKTestConfig).path, "--output", output.path])
        #expect(try String(contentsOf: output, encoding: .utf8).contains("Test Project"))
    }

    @Test func sdkKeyFetchesTheLiveConfigAsFetchDoes() async throws {
        let config = try Fixtures.data(.staticConfig)
        let server = try LoopbackHTTPServer { _ in .respond(status: 200, body: config) }
        let fetched = try await generate(["--sdk-key", "k1", "--environment", "production", "--endpoint", server.baseURL])
        await #expect(fetched == (try generate(["--config", try Fixtures.url(.staticConfig).path])))
        #expect(server.requests.first?.path == "/config/k1")
        #expect(server.requests.first?.queryValue("environment") == "production")
        server.setHandler { _ in .respond(status: 500) }
        let failed = try await convert(["generate", "swift", "--sdk-key", "k1", "--endpoint", server.baseURL])
        #expect(failed.status == 1)
        #expect(failed.err.contains("fetch failed: HTTP 500"))
        #expect(failed.out.isEmpty)
    }

    @Test func awkwardKeysBecomeDistinctValidNames() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let document: JSONValue = [
            "account_id": "1", "project": ["id": "2", "name": "Odd \"keys\"\nproject"],
            "experiences": [
                ["id": "10", "key": "my-exp", "variations": [["id": "100", "key": "default"], ["id": "101", "key": "a\"b\\c"],
                                                             ["id": "102"], ["id": "103", "key": "all"]]],
                ["id": "11", "key": "my_exp", "variations": [["id": "110", "key": "1st"]]],
                ["id": "12", "key": "class", "variations": []],
                ["id": "13", "key": "ConvertKeys", "variations": []],
                ["id": "14", "key": "日本", "variations": []],
                ["id": "15", "key": "my-exp", "variations": [["id": "150", "key": "dropped"]]],
            ],
            "features": [
                ["id": "20", "key": "swift", "variables": [["key": "self", "type": "boolean"], ["key": "init", "type": "integer"],
                                                           ["key": "Button Height", "type": "float"], ["key": "button-height", "type": "string"],
                                                           ["key": "opaque", "type": "rainbow"]]],
                ["id": "21", "key": "Variables", "variables": []],
                ["id": "22", "key": "URLPath", "variables": [["key": "ABTest", "type": "json"]]],
            ],
            "goals": [["id": "30", "key": "default"], ["id": "31", "key": "9-lives"], ["id": "32", "key": "---"]],
        ]
        let config = directory.appendingPathComponent("odd.json")
        try JSONEncoder().encode(document).write(to: config)
        let source = try await generate(["--config", config.path])
        for line in [
            "public enum MyExp {", "public enum MyExp_2 {", "public enum Class {", "public enum ConvertKeys_2 {",
            "public enum Unnamed {",
            "public static let default_ = ConvertKeys.VariationKey(rawValue: \"default\")",
            "public static let aBC = ConvertKeys.VariationKey(rawValue: \"a\\\"b\\\\c\")",
            "public static let _102 = ConvertKeys.VariationKey(rawValue: \"102\")",
            "public static let all_2 = ConvertKeys.VariationKey(rawValue: \"all\")",
            "public static let _1st = ConvertKeys.VariationKey(rawValue: \"1st\")",
            "public enum Swift_ {", "public enum Variables_2 {", "public enum URLPath {",
            "public let self_: Swift.Bool?", "public let init_: Swift.Int?",
            "public let buttonHeight: Swift.Double?", "public let buttonHeight_2: Swift.String?",
            "public let opaque: ConvertKeys.JSON?", "public let abTest: ConvertKeys.JSON?",
            "public static let default_ = ConvertKeys.GoalKey(rawValue: \"default\")",
            "public static let _9Lives = ConvertKeys.GoalKey(rawValue: \"9-lives\")",
            "public static let unnamed = ConvertKeys.GoalKey(rawValue: \"---\")",
        ] {
            #expect(source.contains(line), "\(line)")
        }
        #expect(!source.contains("dropped"), "a repeated key keeps its first entry")
        #expect(source.hasPrefix("// Convert keys of project \"Odd \"keys\" project\" (project 2, account 1),"), "one comment line")

        let keys = directory.appendingPathComponent("Keys.swift")
        try Data(source.utf8).write(to: keys)
        let use = directory.appendingPathComponent("Use.swift")
        try Data("""
        let experiences: [ConvertKeys.ExperienceKey] = [ConvertKeys.Experiences.MyExp.key, ConvertKeys.Experiences.MyExp_2.key,
                                                        ConvertKeys.Experiences.Class.key, ConvertKeys.Experiences.Unnamed.key]
        let variations = [ConvertKeys.Experiences.MyExp.Variations.default_, ConvertKeys.Experiences.MyExp.Variations.all_2]
        let everyVariation: [ConvertKeys.VariationKey] = ConvertKeys.Experiences.MyExp.Variations.all
        let values: ConvertKeys.Features.Swift_.Variables? = nil
        let flag: Bool? = values?.self_
        let goal: ConvertKeys.GoalKey = ConvertKeys.Goals.default_
        func use() async { print(experiences, variations, everyVariation, flag as Any, goal) }

        """.utf8).write(to: use)
        _ = try await typeCheck([keys, use])
    }

    @Test func theVariablesStructDecodesWhatTheSDKDecides() async throws {
        guard let compiler = swiftc else {
            print("GenerateTests: swiftc is not on PATH; the generated source is not compiled")
            return
        }
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let keys = directory.appendingPathComponent("Keys.swift")
        _ = try await generate(["--config", try Fixtures.url(.cdnConfigBaseline).path, "--output", keys.path])

        let sdk = ConvertSwiftSDK(configData: try Fixtures.data(.cdnConfigBaseline),
                                  configuration: ConvertConfiguration(sdkKey: "", networkTracking: false, persistence: .memory),
                                  logSink: SilentLogSink())
        try await sdk.ready()
        var overrides = DecisionOverrides()
        overrides.forceVariation("original", forExperience: "test-experience-ab-fullstack-4")
        overrides.forceVariation("1003142553-original-page", forExperience: "test-experience-ab-fullstack-3")
        sdk.setOverrides(overrides)
        let context = sdk.createContext(visitorId: "generated-keys")
        let decided = Dictionary(uniqueKeysWithValues: ["feature-2", "feature-5"].map { ($0, context.feature($0).variables) })
        #expect(decided["feature-2"]?.isEmpty == false)
        let variables = directory.appendingPathComponent("variables.json")
        try JSONEncoder().encode(decided).write(to: variables)

        let main = directory.appendingPathComponent("main.swift")
        try Data("""
        import Foundation
        let data = FileManager.default.contents(atPath: CommandLine.arguments[1])!
        let decided = try JSONDecoder().decode([String: [String: ConvertKeys.JSON]].self, from: data)
        let two = try ConvertKeys.Features.Feature2.Variables(variables: decided[ConvertKeys.Features.Feature2.key.rawValue]!)
        let five = try ConvertKeys.Features.Feature5.Variables(variables: decided["feature-5"]!)
        guard case .object(let plans)? = five.plans, case .object(let personal)? = plans["personal"] else { exit(3) }
        print(two.price!, two.buttonHeight!, two.additionalData == .object(["foo": .string("bar"), "v": .number(2)]), personal["price"]!)

        """.utf8).write(to: main)
        let program = directory.appendingPathComponent("program")
        let built = try await runSwiftc(compiler, ["-swift-version", "6", keys.path, main.path, "-o", program.path])
        try #require(built.status == 0, "\(built.output)")
        let run = Process()
        run.executableURL = program
        run.arguments = [variables.path]
        let ran = try await run.outcome()
        let printed = String(decoding: ran.out, as: UTF8.self)
        #expect(ran.status == 0)
        let feature = context.feature("feature-2")
        #expect(printed == "\(feature.double("price")!) \(feature.int("button-height")!) true string(\"$17.99\")\n")
    }

    @Test func usageErrorsNameTheProblem() async throws {
        let config = try Fixtures.url(.staticConfig).path
        let cases: [([String], String)] = [
            (["generate"], "name the language to generate"),
            (["generate", "--config", config], "name the language to generate"),
            (["generate", "kotlin", "--config", config], "cannot generate \"kotlin\""),
            (["generate", "swift"], "--config or --sdk-key is required"),
            (["generate", "swift", "--config", config, "--sdk-key", "k"], "give one of --config and --sdk-key"),
            (["generate", "swift", "--config", config, "--name", "9Keys"], "--name must be a Swift type name"),
            (["generate", "swift", "--config", config, "--name", "class"], "--name must be a Swift type name"),
            (["generate", "swift", "--config", config, "--access", "open"], "--access must be one of public, internal"),
            (["generate", "swift", "--config", "/no/such/file"], "--config: cannot read /no/such/file"),
        ]
        for (arguments, message) in cases {
            let result = try await convert(arguments)
            #expect(result.status == 2, "\(arguments)")
            #expect(result.err.contains(message), "\(arguments): \(result.err)")
        }
        let notConfig = try await convert(["generate", "swift", "--config", try Fixtures.url(.hashParityVectors).path])
        #expect(notConfig.status == 1)
        #expect(notConfig.err.contains("config must be a JSON object"))
        let help = try await convert(["generate", "--help"])
        #expect(help.out.hasPrefix("usage: convert generate swift"))
    }
}

/// The type name the generator gives a plain key (letters, digits and dashes).
private enum SwiftNameProbe {
    static func type(_ key: String) -> String {
        key.split(whereSeparator: { !$0.isLetter && !$0.isNumber }).map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }
}
