import ConvertSwiftSDK
import ConvertTesting
import Foundation
import Testing

/// A temporary file holding `text`, removed when the returned value's scope ends.
private struct TemporaryFile {
    let url: URL
    var path: String { url.path }

    init(_ text: String, name: String = "config.json") throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("validate-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        url = directory.appendingPathComponent(name)
        try Data(text.utf8).write(to: url)
    }

    func remove() { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
}

/// Line and column (from 1, columns in Unicode scalars) of the first `needle` in `text`, plus
/// `shift` characters: worked out from the text, independently of the tool's byte walk.
private func position(of needle: String, in text: String, shift: Int = 0) throws -> String {
    let range = try #require(text.range(of: needle), "\(needle) is in the text")
    let before = text[..<range.lowerBound]
    let line = before.split(separator: "\n", omittingEmptySubsequences: false).count
    let lineStart = before.lastIndex(of: "\n").map { text.index(after: $0) } ?? text.startIndex
    let column = text[lineStart..<range.lowerBound].unicodeScalars.count + 1 + shift
    return "\(line):\(column)"
}

/// The baseline fixture with a coerced field and a dropped variation, pretty-printed over many lines.
private func degradedBaseline() throws -> String {
    var json = try #require(try JSONSerialization.jsonObject(with: Fixtures.data(.cdnConfigBaseline)) as? [String: Any])
    var experiences = try #require(json["experiences"] as? [[String: Any]])
    var variations = try #require(experiences[2]["variations"] as? [[String: Any]])
    variations[1]["traffic_allocation"] = "lots"
    experiences[2]["variations"] = variations
    var others = try #require(experiences[1]["variations"] as? [Any])
    others[0] = "not-a-variation"
    experiences[1]["variations"] = others
    json["experiences"] = experiences
    let data = try JSONSerialization.data(withJSONObject: json, options: [.prettyPrinted, .sortedKeys])
    return String(decoding: data, as: UTF8.self)
}

@Suite struct ValidateTests {
    @Test func aGoodConfigLoadsWithASummary() async throws {
        let path = try Fixtures.url(.cdnConfigBaseline).path
        let result = try await convert(["validate", "--config", path])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out == "\(path): loads: account 10035569, project 10034190; 4 experiences, 6 features, 1 audience, "
                + "1 segment, 5 locations, 3 goals, 0 archived experiences; 0 degradations, 0 problems\n")
        let strict = try await convert(["validate", "--config", path, "--strict"])
        #expect(strict.status == 0, "a clean config passes --strict: \(strict.out)")
    }

    @Test func degradationsAreNamedWithTheirPathAndLineAndColumn() async throws {
        let text = try degradedBaseline()
        let file = try TemporaryFile(text)
        defer { file.remove() }
        let result = try await convert(["validate", "--config", file.path])
        #expect(result.status == 0, "a degraded config still loads: \(result.err)")
        let lines = result.out.split(separator: "\n").map(String.init)
        #expect(lines.count == 4)
        let coerced = try position(of: "\"lots\"", in: text)
        let dropped = try position(of: "\"not-a-variation\"", in: text)
        #expect(lines.contains("\(file.path):\(coerced): experiences[2].variations[1].traffic_allocation: coerced: a string read as NaN"),
                "\(lines)")
        #expect(lines.contains("\(file.path):\(dropped): experiences[1].variations[0]: dropped: element is not an object (a string)"),
                "\(lines)")
        // The coerced allocation is NaN: the variation can never be shown, which is a problem.
        #expect(lines.contains { $0.contains(": experiences[2].variations[1]: problem: variation variation_a of experience "
                                             + "sample_ab_test can never be shown: its traffic_allocation is not a number") },
                "\(lines)")
        #expect(lines.last?.hasSuffix("; 2 degradations, 1 problem") == true)
        let strict = try await convert(["validate", "--config", file.path, "--strict"])
        #expect(strict.status == 1, "--strict fails on a degraded config")
        #expect(lines.last?.contains("4 experiences") == true)
    }

    @Test func columnsCountCharactersAndMemberNamesMayBeEscaped() async throws {
        // One line; multi-byte characters before the value and an escaped member name on the way to it.
        let text = #"{"account_id": "1", "project": {"id": "2", "name": "Café ☕"}, "experiences": [{"id": "e", "key": "k", "vari\u0061tions": [{"id": "v", "traffic_allocation": true}]}]}"#
        let file = try TemporaryFile(text)
        defer { file.remove() }
        let result = try await convert(["validate", "--config", file.path])
        #expect(result.status == 0)
        let expected = try position(of: #""traffic_allocation": true"#, in: text, shift: #""traffic_allocation": "#.count)
        #expect(expected.hasPrefix("1:"))
        #expect(result.out.hasPrefix("\(file.path):\(expected): experiences[0].variations[0].traffic_allocation: coerced: a boolean read as 1\n"),
                "\(result.out)")
    }

    @Test func pathsOfAWrappedDocumentAreFoundInsideItsData() async throws {
        let url = try Fixtures.url(.jsSDKTestConfig)
        let text = String(decoding: try Data(contentsOf: url), as: UTF8.self)
        let result = try await convert(["validate", "--config", url.path])
        #expect(result.status == 0)
        let expected = try position(of: #""variations": [{}]"#, in: text, shift: #""variations": ["#.count)
        #expect(result.out.contains("\(url.path):\(expected): experiences[2].variations[0]: dropped: variation has no id"), "\(result.out)")
        #expect(result.out.contains(", environment staging;"))
    }

    @Test func brokenJSONFailsWithLineAndColumn() async throws {
        let text = "{\"account_id\": \"1\",\n  \"project\": {\"id\": \"2\"}\n  \"experiences\": []}\n"
        let file = try TemporaryFile(text)
        defer { file.remove() }
        let result = try await convert(["validate", "--config", file.path])
        #expect(result.status == 1)
        #expect(result.out == "\(file.path):3:3: error: config is not valid JSON: expected ',' or '}'\n", "\(result.out)")
        #expect(!result.out.contains("byte"))

        let missing = try TemporaryFile(#"{"project": {"id": "2"}}"#)
        defer { missing.remove() }
        let unloadable = try await convert(["validate", "--config", missing.path])
        #expect(unloadable.status == 1)
        #expect(unloadable.out == "\(missing.path): error: config is missing account_id\n")
    }

    @Test func theJSONReportParses() async throws {
        let text = try degradedBaseline()
        let file = try TemporaryFile(text)
        defer { file.remove() }
        let result = try await convert(["validate", "--config", file.path, "--format", "json"])
        #expect(result.status == 0)
        let report = try JSONDecoder().decode(JSONValue.self, from: Data(result.out.utf8))
        #expect(report["loads"] == true)
        #expect(report["error"] == .null)
        #expect(report["counts"]?["experiences"] == 4)
        #expect(report["counts"]?["goals"] == 3)
        let degradations = try #require(report["degradations"]?.arrayValue)
        let coerced = try #require(degradations.first { $0["path"] == "experiences[2].variations[1].traffic_allocation" })
        #expect(coerced["kind"] == "coerced")
        let expected = try position(of: "\"lots\"", in: text)
        #expect("\(Int(coerced["line"]?.numberValue ?? 0)):\(Int(coerced["column"]?.numberValue ?? 0))" == expected)
        let offset = try #require(coerced["offset"]?.numberValue.map(Int.init))
        #expect(Array(text.utf8)[offset..<(offset + 6)] == Array("\"lots\"".utf8)[...])

        let broken = try TemporaryFile("[1, 2,\n 3 4]")
        defer { broken.remove() }
        let failed = try await convert(["validate", "--config", broken.path, "--format", "json"])
        #expect(failed.status == 1)
        let failure = try JSONDecoder().decode(JSONValue.self, from: Data(failed.out.utf8))
        #expect(failure["loads"] == false)
        #expect(failure["error"]?["line"] == 2)
        #expect(failure["error"]?["column"] == 4)
        #expect(failure["error"]?["offset"] == 10)
    }
}
