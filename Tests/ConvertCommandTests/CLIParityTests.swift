import ConvertBucketing
import ConvertSwiftSDK
import ConvertTesting
import Foundation
import Testing

// `convert decide` end to end over the shared fixtures, on inputs where the JavaScript SDK's
// decisions differ from an earlier reading of the contract; expected values are JS's.

/// The baseline fixture with `change` applied, written to a temporary file.
private func baseline(_ change: (inout [String: Any]) throws -> Void) throws -> URL {
    var json = try #require(try JSONSerialization.jsonObject(with: try Fixtures.data(.cdnConfigBaseline)) as? [String: Any])
    try change(&json)
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("convert-parity-\(UUID().uuidString).json")
    try JSONSerialization.data(withJSONObject: json).write(to: url)
    return url
}

private func editExperience(_ json: inout [String: Any], _ key: String, _ change: (inout [String: Any]) -> Void) throws {
    var experiences = try #require(json["experiences"] as? [[String: Any]])
    let index = try #require(experiences.firstIndex { $0["key"] as? String == key })
    change(&experiences[index])
    json["experiences"] = experiences
}

/// The variation key bucketing alone gives, from the config's own bucket table.
private func bucketedKey(_ configURL: URL, _ experienceKey: String, _ visitorId: String) async throws -> JSONValue {
    let sdk = ConvertSwiftSDK(configData: try Data(contentsOf: configURL),
                              configuration: ConvertConfiguration(sdkKey: "", networkTracking: false, persistence: .memory),
                              logSink: SilentLogSink())
    try await sdk.ready()
    let experience = try #require(sdk.config?.experience(key: experienceKey))
    let id = try #require(experience.bucketTable.variation(experienceId: experience.id, visitorId: visitorId))
    return .string(experience.variation(id: id)?.key ?? id)
}

private func decide(_ config: URL, environment: String? = nil, _ lines: [String]) async throws -> [JSONValue] {
    var arguments = ["decide", "--config", config.path]
    if let environment { arguments += ["--environment", environment] }
    let result = try await convert(arguments, input: Data(lines.joined(separator: "\n").utf8))
    #expect(result.status == 0, "\(result.err)")
    return try result.out.split(separator: "\n").map { try JSONDecoder().decode(JSONValue.self, from: Data($0.utf8)) }
}

@Suite(.serialized) struct CLIParityTests {
    @Test func aVariableThatCastsToInfinityPrintsAsNullAlone() async throws {
        let config = try baseline { json in
            try editExperience(&json, "test-experience-ab-fullstack-4") { experience in
                var variations = experience["variations"] as! [[String: Any]]
                for v in variations.indices {
                    var changes = variations[v]["changes"] as! [[String: Any]]
                    for c in changes.indices {
                        var data = changes[c]["data"] as! [String: Any]
                        guard "\(data["feature_id"]!)" == "100334" else { continue }
                        data["variables_data"] = ["price": "Infinity", "button-height": 40, "additionalData": "1e400"]
                        changes[c]["data"] = data
                    }
                    variations[v]["changes"] = changes
                }
                experience["variations"] = variations
            }
        }
        defer { try? FileManager.default.removeItem(at: config) }
        let out = try await decide(config, [#"{"visitorId": "inf", "locationProperties": {"location": "pricing"}}"#])
        #expect(out.count == 1)
        #expect(out[0]["visitorId"] == "inf")
        let feature = out[0]["features"]?["feature-2"]
        #expect(feature?["status"] == "enabled")
        #expect(feature?["variables"] == ["price": .null, "button-height": 40, "additionalData": .null])
    }

    @Test func customSegmentsAsAnAttributeOpenTheSegmentGatedExperience() async throws {
        let config = try Fixtures.url(.cdnConfigBaseline)
        let out = try await decide(config, environment: "production", [
            #"{"visitorId": "member", "attributes": {"customSegments": ["10033690"]}, "locationProperties": {"location": "statistics"}}"#,
            #"{"visitorId": "outsider", "attributes": {"customSegments": ["1"]}, "locationProperties": {"location": "statistics"}}"#,
        ])
        #expect(out[0]["experiences"]?["sample_ab_test"] == (try await bucketedKey(config, "sample_ab_test", "member")))
        #expect(out[1]["experiences"]?["sample_ab_test"] == .null)
    }

    @Test func anEmptyEnvironmentAndMatchingOptionsAllDecideAsJavaScriptDoes() async throws {
        let config = try baseline { json in
            try editExperience(&json, "test-experience-ab-fullstack-3") { $0["environment"] = "" }
            try editExperience(&json, "test-experience-ab-fullstack-1") {
                $0["settings"] = ["matching_options": ["audiences": "any", "locations": "all"]]
            }
        }
        defer { try? FileManager.default.removeItem(at: config) }
        let out = try await decide(config, environment: "staging", [
            #"{"visitorId": "env", "attributes": {"desktop": "true", "browser": "FF"}, "locationProperties": {"screen": "home"}}"#,
            #"{"visitorId": "loc", "attributes": {"desktop": "true", "browser": "FF"}, "locationProperties": {"location": "pricing"}}"#,
        ])
        #expect(out[0]["experiences"]?["test-experience-ab-fullstack-3"]
                    == (try await bucketedKey(config, "test-experience-ab-fullstack-3", "env")))
        #expect(out[1]["experiences"]?["test-experience-ab-fullstack-1"]
                    == (try await bucketedKey(config, "test-experience-ab-fullstack-1", "loc")))
    }

    @Test func aNegatedExistsAudienceAdmitsVisitorsWithoutTheKey() async throws {
        let config = try baseline { json in
            var audiences = json["audiences"] as! [[String: Any]]
            audiences[0]["rules"] = ["OR": [["AND": [["OR_WHEN": [
                ["rule_type": "generic_key_value", "key": "debug", "matching": ["match_type": "exists", "negated": true]],
            ]]]]]]
            json["audiences"] = audiences
        }
        defer { try? FileManager.default.removeItem(at: config) }
        let out = try await decide(config, [
            #"{"visitorId": "plain", "locationProperties": {"location": "pricing"}}"#,
            #"{"visitorId": "debugger", "attributes": {"debug": 1}, "locationProperties": {"location": "pricing"}}"#,
        ])
        #expect(out[0]["experiences"]?["test-experience-ab-fullstack-1"]
                    == (try await bucketedKey(config, "test-experience-ab-fullstack-1", "plain")))
        #expect(out[1]["experiences"]?["test-experience-ab-fullstack-1"] == .null)
    }

    @Test func armsWithOddAllocationsAndStatusesBucketAsJavaScriptDoes() async throws {
        // Variation 1: status "" (running), allocation "30"; variation 2: allocation "lots" (NaN).
        let config = try baseline { json in
            try editExperience(&json, "test-experience-ab-fullstack-4") { experience in
                var variations = experience["variations"] as! [[String: Any]]
                variations[0]["status"] = ""
                variations[0]["traffic_allocation"] = "30"
                variations[1]["traffic_allocation"] = "lots"
                experience["variations"] = variations
            }
        }
        defer { try? FileManager.default.removeItem(at: config) }
        let visitors = (0..<40).map { "odd-\($0)" }
        let out = try await decide(config, visitors.map { #"{"visitorId": "\#($0)", "locationProperties": {"location": "pricing"}}"# })
        let sdk = ConvertSwiftSDK(configData: try Data(contentsOf: config),
                                  configuration: ConvertConfiguration(sdkKey: "", networkTracking: false, persistence: .memory),
                                  logSink: SilentLogSink())
        try await sdk.ready()
        let experience = try #require(sdk.config?.experience(key: "test-experience-ab-fullstack-4"))
        var bucketed = 0
        for (line, visitor) in zip(out, visitors) {
            // 30 % of visitors (bucket value below 3000) get the first arm; nobody gets the NaN arm.
            let value = BucketValue.of(experienceId: experience.id, visitorId: visitor)
            let expected: JSONValue = value < 3000 ? .string(experience.variations[0].key ?? "") : .null
            #expect(line["experiences"]?["test-experience-ab-fullstack-4"] == expected, "\(visitor) at \(value)")
            if expected != .null { bucketed += 1 }
        }
        #expect(bucketed > 0 && bucketed < visitors.count)
    }
}

@Suite struct DecideDetailsTests {
    @Test func detailsGiveEachDecisionsReasonAndGate() async throws {
        let config = try Fixtures.url(.cdnConfigBaseline)
        let lines = [
            #"{"visitorId": "in", "attributes": {"desktop": true, "browser": "FF"}, "locationProperties": {"location": "pricing"}}"#,
            #"{"visitorId": "in", "attributes": {"desktop": true, "browser": "FF"}, "locationProperties": {"location": "pricing"}}"#,
            #"{"visitorId": "out", "attributes": {"browser": "CH"}, "locationProperties": {"location": "pricing"}}"#,
        ]
        let result = try await convert(["decide", "--config", config.path, "--details"], input: Data(lines.joined(separator: "\n").utf8))
        #expect(result.status == 0, "\(result.err)")
        let out = try result.out.split(separator: "\n").map { try JSONDecoder().decode(JSONValue.self, from: Data($0.utf8)) }
        try #require(out.count == 3)
        let key = "test-experience-ab-fullstack-1"
        #expect(out[0]["details"]?["experiences"]?[key]?["reason"] == "targetingMatch")
        #expect(out[1]["details"]?["experiences"]?[key]?["reason"] == "cached")
        #expect(out[1]["details"]?["features"]?["feature-1"] == ["reason": "cached", "experience": .string(key)])
        #expect(out[2]["details"]?["experiences"]?[key] == [
            "reason": "default", "decisionReason": "audienceNotMatched", "gate": ["audiences": ["10033684"]],
        ])
        // Kept out of the first carrier, the visitor gets the feature from the next one.
        #expect(out[2]["details"]?["features"]?["feature-1"] == ["reason": "targetingMatch",
                                                                  "experience": "test-experience-ab-fullstack-4"])
        #expect(out[2]["details"]?["features"]?["not-attached-feature-3"] == ["reason": "default"])
        #expect(out[0]["experiences"] == out[1]["experiences"], "details change nothing decided")

        let table = try await convert(["decide", "--config", config.path, "--details", "--format", "table"], input: Data())
        #expect(table.status != 0 && table.err.contains("--details"))
    }
}

@Suite struct DecideInputBoundsTests {
    @Test func aLineOverOneMebibyteIsSkippedWithItsNumberAndNotEchoed() async throws {
        let config = try Fixtures.url(.cdnConfigBaseline)
        let huge = #"{"visitorId": "big", "attributes": {"pad": ""# + String(repeating: "x", count: 2 << 20) + #""}}"#
        let input = [#"{"visitorId": "first"}"#, huge, #"{"visitorId": "after"}"#].joined(separator: "\n")
        let result = try await convert(["decide", "--config", config.path], input: Data(input.utf8))
        #expect(result.status == 1)
        #expect(result.err.contains("line 2 too long"))
        #expect(result.err.utf8.count < 4_096, "the long line is not echoed")
        let visitors = result.out.split(separator: "\n").compactMap { try? JSONDecoder().decode(JSONValue.self, from: Data($0.utf8)) }
        #expect(visitors.map { $0["visitorId"] } == ["first", "after"])
    }
}

@Suite struct DecideForceTests {
    @Test func forcedVariationsAreGivenWhateverTheGatesAndSayStatic() async throws {
        let config = try Fixtures.url(.cdnConfigBaseline)
        let key = "test-experience-ab-fullstack-1"
        let result = try await convert(["decide", "--config", config.path, "--details",
                                  "--force", "\(key)=1003142551-variation-1", "--force", "test-experience-ab-fullstack-4=1003180878"],
                                 input: Data(#"{"visitorId": "nobody"}"#.utf8))
        #expect(result.status == 0, "\(result.err)")
        let line = try JSONDecoder().decode(JSONValue.self, from: Data(result.out.utf8))
        #expect(line["experiences"]?[key] == "1003142551-variation-1")
        #expect(line["details"]?["experiences"]?[key]?["reason"] == "static")
        #expect(line["details"]?["experiences"]?[key]?["decisionReason"] == "forced")
        #expect(line["experiences"]?["test-experience-ab-fullstack-4"] == "variation-1", "by id, printed by key")

        let unknown = try await convert(["decide", "--config", config.path, "--force", "\(key)=nope"], input: Data())
        #expect(unknown.status == 2 && unknown.err.contains("has no variation \"nope\"") && unknown.err.contains("1003142550"))
        let malformed = try await convert(["decide", "--config", config.path, "--force", "nothing"], input: Data())
        #expect(malformed.status == 2 && malformed.err.contains("EXPERIENCE=VARIATION"))
    }
}
