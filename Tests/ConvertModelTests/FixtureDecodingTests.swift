import ConvertModel
import ConvertRules
import ConvertTesting
import Foundation
import Testing

/// Counts taken from the raw documents with Foundation's own JSON reader, independent of ours.
private struct RawCounts {
    var ids: [String: [String]] = [:]

    init(_ data: Data) throws {
        var top = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        if top["account_id"] == nil, let inner = top["data"] as? [String: Any] { top = inner }
        for collection in ["experiences", "audiences", "segments", "locations", "goals", "features"] {
            let elements = top[collection] as? [[String: Any]] ?? []
            ids[collection] = elements.map { "\($0["id"]!)" }
        }
    }
}

@Suite struct FixtureDecodingTests {
    @Test(arguments: Fixtures.File.configs)
    func everyEntityIsKept(file: Fixtures.File) throws {
        let data = try Fixtures.data(file)
        let raw = try RawCounts(data)
        let decoded = try ConfigDecoder.decode(data)
        let config = decoded.config
        #expect(config.experiences.map(\.id) == raw.ids["experiences"])
        #expect(config.audiences.map(\.id) == raw.ids["audiences"])
        #expect(config.segments.map(\.id) == raw.ids["segments"])
        #expect(config.locations.map(\.id) == raw.ids["locations"])
        #expect(config.goals.map(\.id) == raw.ids["goals"])
        #expect(config.features.map(\.id) == raw.ids["features"])
        // The JS SDK's test configs carry one experience whose only variation is `{}`: the
        // experience is kept, the empty variation is the one thing dropped.
        let expected: [String] = (file == .jsSDKTestConfig || file == .rulesTestConfig)
            ? ["experiences[2].variations[0]: dropped: variation has no id"] : []
        #expect(decoded.degradations.map(\.description) == expected)
        #expect(!config.accountId.isEmpty)
        #expect(!config.project.id.isEmpty)
        for experience in config.experiences {
            #expect(config.experience(key: experience.key)?.id == experience.id)
        }
    }

    @Test func baselineCaptureDetails() throws {
        let config = try Fixtures.config(.cdnConfigBaseline)
        #expect(config.accountId == "10035569")
        #expect(config.project.id == "10034190")
        #expect(config.project.utcOffset == 0)
        #expect(config.experiences.compactMap(\.version) == [8, 8, 10, 11])
        #expect((config.experiences.count, config.audiences.count, config.segments.count) == (4, 1, 1))
        #expect((config.locations.count, config.goals.count, config.features.count) == (5, 3, 6))
        let first = try #require(config.experience(key: "test-experience-ab-fullstack-1"))
        #expect(first.environment == "staging")
        #expect(first.locationIds == ["1003350", "1003351", "1003352", "10036409"])
        #expect(first.locationIndexes.count == 4)
        #expect(first.audienceIndexes.map { config.audiences[$0].id } == ["10033684"])
        #expect(first.siteArea == nil)
        #expect(config.audiences[0].type == .permanent)
        let change = try #require(first.variations.first?.changes.first)
        #expect(change.id == "1003122037")
        #expect(change.featureId == "10031")
        #expect(change.variables["caption"] == "Click this")
        #expect(config.experiencesCarrying(featureId: "10031").map(\.key).contains("test-experience-ab-fullstack-1"))
        #expect(config.goal(key: "button-primary-click")?.type == "revenue")
        #expect(config.goal(key: "increase-engagement")?.rules == nil)
        #expect(config.feature(key: "feature-2")?.variables.map(\.type) == [.float, .integer, .json])
    }

    @Test func wrappedDocumentNamesItsEnvironment() throws {
        let decoded = try ConfigDecoder.decode(Fixtures.data(.jsSDKTestConfig))
        #expect(decoded.environment == "staging")
        #expect(decoded.config.experiences.count == 3)
        let e = try #require(decoded.config.experience(key: "test-experience-ab-fullstack-2"))
        #expect(e.environments == ["live", "staging"])
        #expect(e.siteArea != nil)
        #expect(e.audienceMatching == .any)
        #expect(try ConfigDecoder.decode(Fixtures.data(.staticConfig)).environment == nil)
    }

    @Test func segmentIdsInAudienceListAreSeparated() throws {
        let config = try Fixtures.config(.jsSDKTestConfig)
        for e in config.experiences {
            for id in e.audienceIds {
                let isAudience = config.audience(id: id) != nil
                let isSegment = config.segment(id: id) != nil
                #expect(e.segmentIds.contains(id) == (!isAudience && isSegment))
            }
        }
    }

    @Test func mutualExclusionFragmentDecodesWithoutIdentityWhenAllowed() throws {
        let fixture = try #require(try JSONSerialization.jsonObject(with: Fixtures.data(.mutualExclusionRules)) as? [String: Any])
        let fragment = try JSONSerialization.data(withJSONObject: fixture["config"]!)
        #expect(throws: ConfigDecodingError.missingIdentity("account_id")) { try ConfigDecoder.decode(fragment) }
        let decoded = try ConfigDecoder.decode(fragment, options: .init(allowsMissingIdentity: true))
        #expect(decoded.config.experiences.map(\.key) == ["exp-a", "exp-b"])
        #expect(decoded.degradations.isEmpty)
    }

    @Test func decodableThroughJSONDecoder() throws {
        let config = try JSONDecoder().decode(ProjectConfig.self, from: Fixtures.data(.staticConfig))
        #expect(config.experiences.count == 2)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(ProjectConfig.self, from: Data("[1]".utf8)) }
    }
}
