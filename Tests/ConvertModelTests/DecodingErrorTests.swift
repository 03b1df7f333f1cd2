import ConvertModel
import ConvertRules
import ConvertTesting
import Foundation
import Testing

@Suite struct DecodingErrorTests {
    private func error(_ text: String) -> ConfigDecodingError? {
        error(Array(text.utf8))
    }

    private func error(_ bytes: [UInt8]) -> ConfigDecodingError? {
        do {
            _ = try ConfigDecoder.decode(bytes: bytes)
            return nil
        } catch {
            return error
        }
    }

    @Test func emptyInput() {
        #expect(error("") == .empty)
        #expect(error(" \n\t ") == .empty)
        #expect(ConfigDecodingError.empty.description == "config is empty")
    }

    @Test func invalidJSONNamesTheByte() {
        #expect(error("{\"account_id\": }") == .invalidJSON(offset: 15, reason: "unexpected character"))
        #expect(error("{\"a\": 1,}") == .invalidJSON(offset: 8, reason: "expected a member name"))
        #expect(error("{\"a\": 1} x") == .invalidJSON(offset: 9, reason: "unexpected data after the document"))
        #expect(error("{\"a\": \"unterminated}") == .invalidJSON(offset: 20, reason: "unterminated string"))
        #expect(error("{\"a\": 01}") == .invalidJSON(offset: 8, reason: "leading zero in number"))
        #expect(error("{\"a\": tru}") == .invalidJSON(offset: 6, reason: "invalid literal"))
        let message = error("{")?.description ?? ""
        #expect(message.hasPrefix("config is not valid JSON"))
    }

    @Test func nonObjectTopLevel() {
        #expect(error("[]") == .notAnObject(found: "an array"))
        #expect(error("\"config\"") == .notAnObject(found: "a string"))
        #expect(error("42") == .notAnObject(found: "a number"))
        #expect(error("null") == .notAnObject(found: "null"))
        #expect(error("true")?.description == "config must be a JSON object, found a boolean")
    }

    @Test func missingIdentity() {
        #expect(error("{}") == .missingIdentity("account_id"))
        #expect(error("{\"account_id\": \"1\"}") == .missingIdentity("project.id"))
        #expect(error("{\"account_id\": \"1\", \"project\": {\"name\": \"x\"}}") == .missingIdentity("project.id"))
        #expect(error("{\"account_id\": null, \"project\": {\"id\": 2}}") == .missingIdentity("account_id"))
    }

    @Test func invalidUTF8IsATypedError() {
        var bytes = Array("{\"account_id\": \"".utf8)
        bytes += [0xFF, 0xFE]
        bytes += Array("\", \"project\": {\"id\": \"1\"}}".utf8)
        guard case .invalidJSON(_, let reason)? = error(bytes) else {
            Issue.record("expected invalidJSON")
            return
        }
        #expect(reason == "invalid UTF-8 in string")
    }

    @Test func deepNestingIsRefusedNotCrashed() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(error("{\"a\": \(deep)}") == .tooDeep(offset: 517, limit: 512))
    }

    @Test func truncatedInputsAtEveryLength() throws {
        let text = #"{"account_id":"1","project":{"id":"2"},"experiences":[{"id":"e","key":"k","variations":[{"id":"v","traffic_allocation":50.5}]}],"s":"\u00e9\n"}"#
        let bytes = Array(text.utf8)
        for n in 0..<bytes.count {
            #expect(error(Array(bytes[..<n])) != nil, "prefix \(n)")
        }
        #expect(error(bytes) == nil)
    }
}

@Suite struct JSONParserTests {
    @Test func scalarsAndEscapes() throws {
        let value = try JSONParser.parse(Array(#"{"s":"a\"b\\c\/d\n\t\u00e9\ud83d\ude80","n":-12.5e2,"i":-0,"t":true,"f":false,"z":null,"big":12345678901234567890}"#.utf8))
        #expect(value["s"] == "a\"b\\c/d\n\té🚀")
        #expect(value["n"] == -1250)
        #expect(value["i"] == 0)
        #expect(value["t"] == true)
        #expect(value["f"] == false)
        #expect(value["z"] == .null)
        #expect(value["big"] == .number(Double("12345678901234567890")!))
    }

    @Test func loneSurrogateBecomesReplacementCharacter() throws {
        #expect(try JSONParser.parse(Array(#"["\ud800x"]"#.utf8)) == ["\u{FFFD}x"])
    }

    @Test func duplicateKeysKeepTheLastValue() throws {
        #expect(try JSONParser.parse(Array(#"{"a":1,"a":2}"#.utf8)) == ["a": 2])
    }

    @Test(arguments: Fixtures.File.allCases)
    func agreesWithFoundationOnEveryFixture(file: Fixtures.File) throws {
        let data = try Fixtures.data(file)
        #expect(try JSONParser.parse(data) == JSONDecoder().decode(JSONValue.self, from: data))
    }
}
