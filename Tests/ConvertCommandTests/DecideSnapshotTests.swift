import ConvertSwiftSDK
import ConvertTesting
import Foundation
import Testing

// `convert decide --snapshot`: one DecisionSnapshot per input line, in its stable JSON.

@Suite(.serialized) struct DecideSnapshotTests {
    private let lines = [
        #"{"visitorId": "s1", "attributes": {"desktop": "true", "browser": "FF"}, "locationProperties": {"location": "pricing"}}"#,
        #"{"visitorId": "s2", "locationProperties": {"location": "pricing"}}"#,
        #"{"visitorId": "s3"}"#,
    ]

    @Test func printsOneParseableSnapshotPerInputLine() async throws {
        let config = try Fixtures.url(.cdnConfigBaseline).path
        let input = Data(lines.joined(separator: "\n").utf8)
        let result = try await convert(["decide", "--config", config, "--snapshot"], input: input)
        #expect(result.status == 0, "\(result.err)")
        let printed = result.out.split(separator: "\n").map(String.init)
        #expect(printed.count == lines.count)
        let snapshots = try printed.map { try DecisionSnapshot(jsonData: Data($0.utf8)) }
        #expect(snapshots.map(\.visitorId) == ["s1", "s2", "s3"])
        for (line, snapshot) in zip(printed, snapshots) {
            #expect(String(decoding: try snapshot.jsonData(), as: UTF8.self) == line, "the stable form, as printed")
            #expect(snapshot.accountId == "10035569" && snapshot.projectId == "10034190")
            #expect(snapshot.features.count == 6, "every feature")
            #expect(snapshot.experiences.allSatisfy { !$0.isTracked }, "decide tracks nothing")
        }

        // The same decisions as the usual output.
        let usual = try await convert(["decide", "--config", config], input: input)
        let decisions = try usual.out.split(separator: "\n").map { try JSONDecoder().decode(JSONValue.self, from: Data($0.utf8)) }
        for (decision, snapshot) in zip(decisions, snapshots) {
            guard case .object(let experiences)? = decision["experiences"] else { Issue.record("no experiences"); continue }
            let decided = experiences.filter { !$0.value.isNull }.mapValues { $0.stringValue }
            #expect(decided == Dictionary(uniqueKeysWithValues: snapshot.experiences.map { ($0.experienceKey, $0.variationKey) }))
            for feature in snapshot.features {
                #expect(decision["features"]?[feature.key]?["status"]?.stringValue == feature.status.rawValue)
            }
        }
        #expect(!snapshots[0].experiences.isEmpty && snapshots[2].experiences.isEmpty)
    }

    @Test func theRevisionIsTheOneGenerateWrites() async throws {
        let config = try Fixtures.url(.cdnConfigBaseline).path
        let result = try await convert(["decide", "--config", config, "--snapshot"], input: Data(lines[0].utf8))
        let snapshot = try DecisionSnapshot(jsonData: Data(result.out.utf8.dropLast()))
        let generated = try await convert(["generate", "swift", "--config", config])
        #expect(generated.out.contains("static let revision = \"\(snapshot.configRevision)\""))
    }

    @Test func snapshotsGoWithTheUsualJSONFormOnly() async throws {
        let config = try Fixtures.url(.cdnConfigBaseline).path
        for extra in [["--format", "table"], ["--details"]] {
            let result = try await convert(["decide", "--config", config, "--snapshot"] + extra, input: Data())
            #expect(result.status == 2)
            #expect(result.err.contains("--snapshot goes with neither"))
        }
    }
}
