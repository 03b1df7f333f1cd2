import ConvertSwiftSDK
import ConvertTesting
import Foundation
import Testing

/// The baseline fixture changed by `change`, written to a temporary file; returns its path.
private func baselineFile(_ change: (inout [String: Any]) throws -> Void) throws -> URL {
    var json = try #require(try JSONSerialization.jsonObject(with: Fixtures.data(.cdnConfigBaseline)) as? [String: Any])
    try change(&json)
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("problems-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let url = directory.appendingPathComponent("config.json")
    try JSONSerialization.data(withJSONObject: json, options: [.prettyPrinted, .sortedKeys]).write(to: url)
    return url
}

/// Sets `match_type` of every leaf of the baseline's one audience (both of its OR blocks).
private func unknownOperator(_ json: inout [String: Any]) throws {
    var audiences = try #require(json["audiences"] as? [[String: Any]])
    var rules = try #require(audiences[0]["rules"] as? [String: Any])
    var blocks = try #require(rules["OR"] as? [[String: Any]])
    for b in blocks.indices {
        var groups = try #require(blocks[b]["AND"] as? [[String: Any]])
        for g in groups.indices {
            var leaves = try #require(groups[g]["OR_WHEN"] as? [[String: Any]])
            for l in leaves.indices {
                var matching = try #require(leaves[l]["matching"] as? [String: Any])
                matching["match_type"] = "equalz"
                leaves[l]["matching"] = matching
            }
            groups[g]["OR_WHEN"] = leaves
        }
        blocks[b]["AND"] = groups
    }
    rules["OR"] = blocks
    audiences[0]["rules"] = rules
    json["audiences"] = audiences
}

@Suite struct ConfigProblemTests {
    @Test func anUnknownOperatorIsAnAudienceThatNeverMatchesAndExperiencesThatBucketNobody() async throws {
        let url = try baselineFile(unknownOperator)
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let result = try await convert(["validate", "--config", url.path])
        #expect(result.status == 0, "the config loads: \(result.err)")
        let lines = result.out.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.contains("audiences[0].rules: problem: audience adv-audience (id 10033684) can never match: "
                                             + "OR[0].AND[0].OR_WHEN[0]: match_type \"equalz\" is not an operator the SDK knows") },
                "\(lines)")
        // Both experiences gated on that audience alone.
        for (index, key) in [(0, "test-experience-ab-fullstack-1"), (1, "test-experience-ab-fullstack-3")] {
            #expect(lines.contains { $0.contains("experiences[\(index)].audiences: problem: experience \(key) can bucket no visitor: "
                                                 + "audience adv-audience (id 10033684) can never match") }, "\(lines)")
        }
        #expect(lines.last?.hasSuffix("0 degradations, 3 problems") == true, "\(lines.last ?? "")")
        // Each problem line starts at the element's place in the file.
        #expect(lines.dropLast().allSatisfy { $0.hasPrefix(url.path + ":") && $0.split(separator: ":").count > 3 })

        let strict = try await convert(["validate", "--config", url.path, "--strict"])
        #expect(strict.status == 1, "--strict fails on a config that loads with problems")
        let json = try await convert(["validate", "--config", url.path, "--format", "json"])
        let report = try JSONDecoder().decode(JSONValue.self, from: Data(json.out.utf8))
        #expect(report["problems"]?.arrayValue?.count == 3)
        #expect(report["problems"]?.arrayValue?.first?["line"]?.numberValue != nil)
    }

    @Test func explainNamesTheUnknownOperator() async throws {
        let url = try baselineFile(unknownOperator)
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        // A desktop visitor: the audience's first block would match but for its operator.
        let result = try await convert(["explain", "--config", url.path, "--visitor", "v1", "--attributes", #"{"desktop": true, "browser": "FF"}"#,
                                  "--location", #"{"location": "pricing"}"#, "--experience", "test-experience-ab-fullstack-1"])
        #expect(result.status == 0, "\(result.err)")
        let audience = try #require(result.out.split(separator: "\n").first { $0.contains("audience adv-audience") })
        #expect(audience.contains("deciding rule OR[0].AND[0].OR_WHEN[0]"), "the unknown operator's leaf, not the last to fail: \(audience)")
        #expect(audience.contains("match_type \"equalz\" is not an operator the SDK knows"), "\(audience)")
    }

    @Test func aTrafficAllocationThatIsNotANumberIsAnExperienceThatBucketsNobody() async throws {
        // sample_ab_test's first variation in bucketing order: NaN shuts out every later one too.
        let url = try baselineFile { json in
            var experiences = try #require(json["experiences"] as? [[String: Any]])
            var variations = try #require(experiences[2]["variations"] as? [[String: Any]])
            variations[0]["traffic_allocation"] = "fifty"
            experiences[2]["variations"] = variations
            json["experiences"] = experiences
        }
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let result = try await convert(["validate", "--config", url.path])
        #expect(result.status == 0)
        #expect(result.out.contains("experiences[2].variations: problem: experience sample_ab_test can bucket no visitor: "
                                    + "traffic_allocation of control is not a number"), "\(result.out)")
        #expect(try await convert(["validate", "--config", url.path, "--strict"]).status == 1)
    }

    @Test func inputErrorsSayWhereAndWhatWasMeant() async throws {
        let input = Data("""
        {"visitorId": "a",}
        {"visitor_id": "b"}
        {"visitorId": "c", "Attributes": {"desktop": true}}
        """.utf8)
        let result = try await convert(["decide", "--config", try Fixtures.url(.cdnConfigBaseline).path], input: input)
        #expect(result.status == 1)
        #expect(result.err.contains("line 1, column 18: not valid JSON: a trailing comma before '}'"), "\(result.err)")
        #expect(result.err.contains(#"line 2: "visitorId" must be a non-empty string (the line has "visitor_id"; the field is "visitorId")"#),
                "\(result.err)")
        #expect(result.err.contains(#"line 3: "Attributes" is not a field of a visitor line; did you mean "attributes"?"#), "\(result.err)")

        let attributes = try await convert(["explain", "--config", try Fixtures.url(.cdnConfigBaseline).path, "--visitor", "v",
                                      "--attributes", #"{"a": }"#, "--experience", "sample_ab_test"])
        #expect(attributes.status == 2)
        #expect(attributes.err.hasPrefix("convert: --attributes: column 7: not valid JSON: "), "said once: \(attributes.err)")
        #expect(!attributes.err.contains("not valid JSON: not valid JSON"))

        let unknown = try await convert(["explain", "--config", try Fixtures.url(.cdnConfigBaseline).path, "--visitor", "v",
                                   "--experience", "nope"])
        #expect(unknown.status == 2)
        #expect(unknown.err.contains(#"no experience has the key "nope" (known: test-experience-ab-fullstack-1, "#), "\(unknown.err)")
    }
}
