import ConvertJSON
@testable import ConvertRedis
import ConvertStorage
import ConvertVisitor
import Foundation
import Testing

/// Records decoded from `HGETALL` replies, many of them sharing their segment and location
/// fields (as a site's visitors do), some not: each decodes to what it holds.
@Suite struct RedisRecordDecodingTests {
    private func reply(_ fields: [(String, String)]) -> RESPValue {
        .array(fields.flatMap { [RESPValue.bulkString(Data($0.0.utf8)), .bulkString(Data($0.1.utf8))] })
    }

    @Test func recordsSharingOrNotTheirFieldsDecodeToWhatTheyHold() throws {
        // More distinct segment sets and location lists than the decoded fields keep, then
        // repeats of the first ones (replaced by then) and of the last ones (still kept).
        let browsers = (0..<20).map { "B\($0)" }
        for round in 0..<3 {
            for (index, browser) in browsers.enumerated() {
                let location = "location-\(index % 12)"
                let record = reply([("d:100", "20\(index)"), ("s", #"{"browser":"\#(browser)","devices":["desktop"]}"#),
                                    ("l", #"["\#(location)"]"#), ("g:7", "1")])
                let data = try #require(try RedisVisitorBackend.decode(record, key: "visitor:\(round)-\(index)"))
                #expect(data.segments.browser == browser)
                #expect(data.segments.devices == ["desktop"])
                #expect(data.locations == [location])
                #expect(data.bucketing == ["100": "20\(index)"])
                #expect(data.goals == ["7"])
            }
        }
        // A number stays a number, a field without report keys stores no segments.
        let numbers = try #require(try RedisVisitorBackend.decode(reply([("s", #"{"country":5}"#)]), key: "n"))
        #expect(numbers.segmentValues == ["country": .number(5)])
        let none = try #require(try RedisVisitorBackend.decode(reply([("s", #"{"other":"x"}"#), ("d:1", "2")]), key: "o"))
        #expect(none.segmentValues.isEmpty)
    }

    @Test func aMalformedFieldIsRefusedEachTimeItIsRead() {
        for _ in 0..<2 {
            #expect(throws: RedisVisitorBackend.InvalidRecord.self) {
                try RedisVisitorBackend.decode(reply([("s", "not json"), ("d:1", "2")]), key: "bad")
            }
            #expect(throws: RedisVisitorBackend.InvalidRecord.self) {
                try RedisVisitorBackend.decode(reply([("l", #"[1, 2]"#), ("d:1", "2")]), key: "bad")
            }
        }
    }
}
