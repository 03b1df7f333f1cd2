import ConvertModel
import ConvertRules
import ConvertTesting
import Foundation
import Testing

/// Decoding bytes reads the parsed document in place; decoding a `JSONValue` reads the tree.
/// Both must give the same config, degradations and errors.
@Suite struct DecodingPathTests {
    private func expectSamePaths(_ text: String, options: ConfigDecoder.Options = .init(allowsMissingIdentity: true),
                                 sourceLocation: SourceLocation = #_sourceLocation) throws {
        try expectSamePaths(Array(text.utf8), options: options, sourceLocation: sourceLocation)
    }

    private func expectSamePaths(_ bytes: [UInt8], options: ConfigDecoder.Options = .init(allowsMissingIdentity: true),
                                 sourceLocation: SourceLocation = #_sourceLocation) throws {
        let fromBytes = Result { () throws(ConfigDecodingError) in try ConfigDecoder.decode(bytes: bytes, options: options) }
        let fromTree = Result { () throws(ConfigDecodingError) -> DecodedConfig in
            let json: JSONValue
            do throws(JSONParseError) { json = try JSONParser.parse(bytes) } catch { throw ConfigDecodingError(error) }
            return try ConfigDecoder.decode(json: json, options: options)
        }
        switch (fromBytes, fromTree) {
        case (.success(let a), .success(let b)):
            #expect(a.environment == b.environment, sourceLocation: sourceLocation)
            #expect(a.degradations == b.degradations, sourceLocation: sourceLocation)
            let (x, y) = (a.config, b.config)
            #expect(x.accountId == y.accountId, sourceLocation: sourceLocation)
            #expect(x.project == y.project, sourceLocation: sourceLocation)
            #expect(x.experiences == y.experiences, sourceLocation: sourceLocation)
            #expect(x.audiences == y.audiences, sourceLocation: sourceLocation)
            #expect(x.segments == y.segments, sourceLocation: sourceLocation)
            #expect(x.locations == y.locations, sourceLocation: sourceLocation)
            #expect(x.goals == y.goals, sourceLocation: sourceLocation)
            #expect(x.features == y.features, sourceLocation: sourceLocation)
            #expect(x.archivedExperienceIds == y.archivedExperienceIds, sourceLocation: sourceLocation)
        case (.failure(let a), .failure(let b)):
            #expect(a == b, sourceLocation: sourceLocation)
        default:
            Issue.record("one path failed, the other did not: \(fromBytes), \(fromTree)", sourceLocation: sourceLocation)
        }
    }

    @Test(arguments: Fixtures.File.configs)
    func fixturesDecodeAlikeBothWays(file: Fixtures.File) throws {
        try expectSamePaths([UInt8](Fixtures.data(file)), options: .init())
    }

    @Test func repeatedKeysKeepTheLastValueBothWays() throws {
        try expectSamePaths(#"""
            {"account_id":"1","account_id":"2","project":{"id":"p","name":"a","name":7},
             "experiences":[{"id":"e","key":"k","key":"k2","variations":[{"id":"v","status":"x","status":"running"}],
                             "variations":[{"id":"w","changes":[{"type":"fullStackFeature","data":{"feature_id":1,
                               "variables_data":{"a":1,"a":2,"b":{"c":1,"c":[1]}}}}]}]}],
             "audiences":[{"id":"a","rules":{"OR":[]},"rules":{"OR":[{"AND":[{"OR_WHEN":[
               {"key":"x","key":"y","matching":{"match_type":"equals","negated":false,"negated":true},"value":"1","value":2}]}]}]}}]}
            """#)
    }

    @Test func escapedAndNonASCIIKeysMatchAsTextBothWays() throws {
        try expectSamePaths(#"""
            {"\u0061ccount_id":"1","project":{"\u0069d":"p","na\u006De":"caf\u00e9","typé":"x"},
             "experiences":[{"id":"e\/1","k\u0065y":"k","ke\u0301y":"no","variations":[]}],
             "goals":[{"id":"g","key":"g","key":"\u0067\u0032"}]}
            """#)
    }

    @Test func driftDecodesAlikeBothWays() throws {
        try expectSamePaths(#"""
            {"environment":"prod","data":{"account_id":10035569,"project":{"id":1e3,"utc_offset":" 2 ","settings":{"a":[1,{"b":null}]}},
             "experiences":[1,null,{"id":"e","key":"k","version":[12],"environment":0,"environments":[1,"a",null,{}],
               "locations":"x","site_area":[],"audiences":[true],"settings":{"matching_options":{"audiences":"all","locations":5}},
               "variations":[{"id":"v","traffic_allocation":"50","status":0},{"id":"w","traffic_allocation":{},"changes":{}},
                             {"key":"nokey"},{"id":2,"traffic_allocation":true,"changes":[{"data":{"variables_data":[]}},3]}]},
               {"id":"f","key":"k2","version":"abc","environment":"","site_area":{"OR":[{"AND":[{"OR_WHEN":[1,{"matching":{}}]}]}]}}],
             "audiences":{"id":1},"segments":[{"id":"s","key":null,"rules":"no"}],"locations":[{"id":"l","trigger":{"type":3}}],
             "goals":[{"id":"g"},{"id":"h","key":"h","rules":null}],
             "features":[{"id":"f","key":"f","variables":[{"key":"a","type":"json"},{"type":"x"},{"key":1}]}],
             "archived_experiences":["1",2,null,true]}}
            """#)
        try expectSamePaths(#"{"account_id":"1","project":{"id":"p","utc_offset":1e999}}"#)
        try expectSamePaths(#"{"data":{"account_id":"1"},"environment":3}"#)
        try expectSamePaths(#"{"data":[1],"environment":"x"}"#)
        try expectSamePaths(#"{}"#)
        try expectSamePaths(#"{}"#, options: .init())
        try expectSamePaths(#"{"account_id":"1","project":{}}"#, options: .init())
    }

    @Test func failuresAreTheSameBothWays() throws {
        for text in ["", "  ", "[1]", "\"x\"", "{\"a\":}", "{\"a\":1,}", "{\"a\" 1}", "[1,2", "{\"a\":\"\u{1}\"}",
                     "{\"a\":1} x", "{\"a\":\"\\q\"}", "{\"a\":01}", String(repeating: "[", count: 600)] {
            try expectSamePaths(text)
        }
        try expectSamePaths([0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D])
    }
}

/// Strings are scanned several bytes at a time: whatever the position of a quote, an escape, a
/// control character or a non-ASCII byte, the result and the error offsets are the byte loop's.
@Suite struct JSONStringScanTests {
    @Test func everyPositionOfASpecialByteReadsAlike() throws {
        for length in 0..<26 {
            for position in 0...length {
                let head = String(repeating: "a", count: position)
                let tail = String(repeating: "b", count: length - position)
                #expect(try JSONParser.parse(Array("[\"\(head)\(tail)\"]".utf8)) == [.string(head + tail)])
                #expect(try JSONParser.parse(Array("[\"\(head)\\n\(tail)\"]".utf8)) == [.string(head + "\n" + tail)])
                #expect(try JSONParser.parse(Array("[\"\(head)é\(tail)\"]".utf8)) == [.string(head + "é" + tail)])
                #expect(try JSONParser.parse(Array("{\"\(head)\(tail)\":\"\(tail)\"}".utf8)) == [head + tail: .string(tail)])
                #expect(throws: JSONParseError.invalidJSON(offset: 2 + position, reason: "control character in string")) {
                    try JSONParser.parse(Array("[\"\(head)\u{1}\(tail)\"]".utf8))
                }
                #expect(throws: JSONParseError.invalidJSON(offset: 2, reason: "invalid UTF-8 in string")) {
                    try JSONParser.parse([0x5B, 0x22] + Array(head.utf8) + [0xFF] + Array(tail.utf8) + [0x22, 0x5D])
                }
                #expect(throws: JSONParseError.invalidJSON(offset: 1 + length, reason: "unterminated string")) {
                    try JSONParser.parse(Array("\"\(head)\(tail)".utf8))
                }
            }
        }
    }
}
