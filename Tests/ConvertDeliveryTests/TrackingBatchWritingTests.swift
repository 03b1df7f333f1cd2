import ConvertQueue
import ConvertSwiftSDK
import ConvertTesting
import ConvertVisitor
import Foundation
import Testing

/// The tracking body written directly is byte for byte what `JSONEncoder` (sorted keys,
/// unescaped slashes) writes, for any events the SDK can send.
struct TrackingBatchWritingTests {
    /// Strings with what JSON escapes or keeps as is: quotes, backslashes, slashes, every
    /// control character, DEL, non-ASCII letters and emoji, digits (ids sort as text).
    static let alphabet: [String] = ["a", "Z", "0", "9", "1", "-", "_", "\"", "\\", "/", "\u{7F}", "é", "€", "😀", " ", ":", "{", "]"]
        + (0..<0x20).map { String(UnicodeScalar(UInt8($0))) }

    static func text(_ random: inout SeededGenerator, maximum: Int = 12) -> String {
        (0..<Int.random(in: 0...maximum, using: &random)).map { _ in alphabet.randomElement(using: &random)! }.joined()
    }

    static func segments(_ random: inout SeededGenerator) -> VisitorSegments? {
        guard Bool.random(using: &random) else { return nil }
        func maybe(_ random: inout SeededGenerator) -> String? { Bool.random(using: &random) ? text(&random) : nil }
        func list(_ random: inout SeededGenerator) -> [String]? {
            Bool.random(using: &random) ? (0..<Int.random(in: 0...3, using: &random)).map { _ in text(&random) } : nil
        }
        return VisitorSegments(country: maybe(&random), browser: maybe(&random), devices: list(&random), source: maybe(&random),
                               campaign: maybe(&random), visitorType: maybe(&random), customSegments: list(&random))
    }

    static func event(_ random: inout SeededGenerator, visitors: [String]) -> TrackingEvent {
        let payload: TrackingEvent.Payload
        if Bool.random(using: &random) {
            payload = .bucketing(experienceId: text(&random), variationId: text(&random))
        } else {
            let data: [String: String]? = Bool.random(using: &random) ? Dictionary(
                (0..<Int.random(in: 0...5, using: &random)).map { _ in (text(&random, maximum: 4), text(&random)) },
                uniquingKeysWith: { first, _ in first }) : nil
            payload = .conversion(goalId: text(&random), goalData: nil, bucketingData: data)
        }
        return TrackingEvent(accountId: "10022898", projectId: "10025986", visitorId: visitors.randomElement(using: &random)!,
                             segments: segments(&random), payload: payload)
    }

    @Test func writtenBodiesAreJSONEncodersBytes() throws {
        var random = SeededGenerator(seed: 20_261_126)
        for round in 0..<2_000 {
            let visitors = (0..<Int.random(in: 1...4, using: &random)).map { _ in Self.text(&random) }
            let events = (0..<Int.random(in: 1...6, using: &random)).map { _ in Self.event(&random, visitors: visitors) }
            let source = Self.text(&random), enrichData = Bool.random(using: &random)
            let written = try #require(TrackingBatch.written(events, source: source, enrichData: enrichData),
                                       "round \(round): no goal data, so written directly")
            let foundation = try TrackingBatch(events: events, source: source, enrichData: enrichData).encodedByFoundation()
            #expect(written == Array(foundation), "round \(round):\n\(String(decoding: written, as: UTF8.self))\n\(String(decoding: foundation, as: UTF8.self))")
            if written != Array(foundation) { return }
        }
    }

    @Test func aBatchOfOrdinaryEventsDecodesBackToItsEvents() throws {
        let events = [
            TrackingEvent(accountId: "1", projectId: "2", visitorId: "v1", segments: VisitorSegments(browser: "CH", devices: ["DESK"]),
                          payload: .bucketing(experienceId: "100", variationId: "200")),
            TrackingEvent(accountId: "1", projectId: "2", visitorId: "v2", segments: nil,
                          payload: .conversion(goalId: "300", goalData: nil, bucketingData: ["100": "200", "99": "201"])),
            TrackingEvent(accountId: "1", projectId: "2", visitorId: "v1", segments: nil,
                          payload: .conversion(goalId: "301", goalData: nil, bucketingData: nil)),
        ]
        let batch = TrackingBatch(events: events, source: "ios-sdk", enrichData: true)
        let body = try TrackingBatch.body(of: events)
        #expect(try JSONDecoder().decode(TrackingBatch.self, from: body) == batch)
        #expect(String(decoding: body, as: UTF8.self).hasPrefix(#"{"accountId":"1","enrichData":true,"projectId":"2","source":"ios-sdk","visitors":[{"events":[{"data":{"experienceId":"100","variationId":"200"},"eventType":"bucketing"}"#))
    }

    @Test func goalDataIsLeftToJSONEncoder() throws {
        let event = TrackingEvent(accountId: "1", projectId: "2", visitorId: "v", segments: nil, payload: .conversion(
            goalId: "3", goalData: [GoalDataItem(.amount, .number(10.5)), GoalDataItem(.productsCount, .number(1e21))], bucketingData: nil))
        #expect(TrackingBatch.written([event], source: "ios-sdk", enrichData: true) == nil)
        #expect(try TrackingBatch.body(of: [event]) == TrackingBatch(events: [event]).encodedByFoundation())
    }
}
