import ConvertDecision
import ConvertHashing
import ConvertModel
import ConvertRules
import ConvertVisitor
import Foundation
import Testing

// The engine on its own: a config, an input value, a decision. No context, store, queue or
// runtime is built here; this target cannot see them.

/// The test kit's fixtures, read from the source tree (this target depends on deciding alone).
private let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("ConvertTesting/Fixtures")

private func installed(_ bytes: Data, environment: String = "production") throws -> InstalledConfig {
    let decoded = try ConfigDecoder.decode(bytes, options: .init(allowsMissingIdentity: true))
    return InstalledConfig(config: decoded.config, environment: environment, bytes: bytes)
}

private func installed(fixture name: String) throws -> InstalledConfig {
    let bytes = try Data(contentsOf: fixtures.appendingPathComponent(name))
    let decoded = try ConfigDecoder.decode(bytes, options: .init(allowsMissingIdentity: true))
    // The environment the fixture's experiences run in, so that they are decided at all.
    let environment = decoded.environment ?? decoded.config.experiences.lazy.compactMap(\.environment).first ?? "production"
    return try installed(bytes, environment: environment)
}

private func input(_ visitorId: String, attributes: [String: JSONValue] = [:], location: [String: JSONValue] = [:],
                   stored: VisitorData = VisitorData()) -> DecisionInput {
    DecisionInput(visitorId: visitorId, hashSeed: MurmurHash3.defaultSeed, attributes: attributes, locationProperties: location,
                  creationSegments: nil, stored: stored)
}

/// One experience with `variations` (id, allocation, status), no location or audience.
private func oneExperience(id: String, version: Double, variations: [(String, Double?, String?)],
                           archived: Bool = false, environment: String? = nil) throws -> InstalledConfig {
    var experience: [String: Any] = [
        "id": id, "key": "experience-\(id)", "name": "E", "type": "a/b_fullstack", "status": "active", "version": version,
        "variations": variations.map { variation -> [String: Any] in
            var fields: [String: Any] = ["id": variation.0, "key": "v-\(variation.0)", "name": variation.0, "changes": []]
            if let allocation = variation.1 { fields["traffic_allocation"] = allocation }
            if let status = variation.2 { fields["status"] = status }
            return fields
        },
    ]
    if let environment { experience["environment"] = environment }
    var document: [String: Any] = ["account_id": "100", "project": ["id": "200"], "experiences": [experience]]
    if archived { document["archived_experiences"] = [id] }
    return try installed(try JSONSerialization.data(withJSONObject: document))
}

private struct Vector: Decodable {
    struct Arm: Decodable {
        let id: String
        let trafficAllocation: Double?
        let status: String?
        enum CodingKeys: String, CodingKey {
            case id, status
            case trafficAllocation = "traffic_allocation"
        }
    }
    let description: String
    let experienceId: String
    let visitorId: String
    let version: Double
    let variations: [Arm]
    let expected: String?
}

@Suite struct DecisionEngineTests {
    @Test func theCrossSDKBucketingVectorsHoldThroughTheEngine() throws {
        let data = try Data(contentsOf: fixtures.appendingPathComponent("cross-sdk-bucketing-vectors.json"))
        let vectors = try JSONDecoder().decode([Vector].self, from: data)
        #expect(vectors.count == 59)
        for vector in vectors {
            let config = try oneExperience(id: vector.experienceId, version: vector.version,
                                           variations: vector.variations.map { ($0.id, $0.trafficAllocation, $0.status) })
            let experience = config.experiences[0]
            var memo = RuleMemo()
            let decision = DecisionEngine.decide(experience, at: 0, in: config, for: input(vector.visitorId), memo: &memo)
            #expect(decision.variation(in: experience)?.id == vector.expected, "\(vector.description)")
            #expect(decision.reason == (vector.expected == nil ? .notBucketed : .bucketed), "\(vector.description)")
            #expect(decision.isNew == (vector.expected != nil), "\(vector.description)")
        }
    }

    @Test func aStoredDecisionIsKeptAndNotNewWhileAStoredIdOfNoVariationIsBucketedAfresh() throws {
        let config = try oneExperience(id: "500", version: 1, variations: [("a", 50, nil), ("b", 50, nil)])
        let experience = config.experiences[0]
        var memo = RuleMemo()
        let fresh = DecisionEngine.decide(experience, at: 0, in: config, for: input("visitor-1"), memo: &memo)
        let freshIndex = try #require(fresh.variationIndex)
        let other = 1 - freshIndex
        let otherId = experience.variations[other].id

        let stored = DecisionEngine.decide(experience, at: 0, in: config,
                                           for: input("visitor-1", stored: VisitorData(bucketing: ["500": otherId])), memo: &memo)
        #expect(stored.reason == .storedDecision)
        #expect(stored.variationIndex == other, "the stored variation wins over the visitor's bucket")
        #expect(!stored.isNew)

        let unknown = DecisionEngine.decide(experience, at: 0, in: config,
                                            for: input("visitor-1", stored: VisitorData(bucketing: ["500": "gone"])), memo: &memo)
        #expect(unknown.reason == .bucketed)
        #expect(unknown.variationIndex == freshIndex)
        #expect(unknown.isNew)
    }

    @Test func anArchivedExperienceAndAnotherEnvironmentsDecideNothing() throws {
        let archived = try oneExperience(id: "600", version: 1, variations: [("a", 100, nil)], archived: true)
        var memo = RuleMemo()
        let a = DecisionEngine.decide(archived.experiences[0], at: 0, in: archived, for: input("v"), memo: &memo)
        #expect(a.reason == .archived)
        #expect(a.variationIndex == nil)

        let staging = try oneExperience(id: "601", version: 1, variations: [("a", 100, nil)], environment: "staging")
        let e = DecisionEngine.decide(staging.experiences[0], at: 0, in: staging, for: input("v"), memo: &memo)
        #expect(e.reason == .environmentMismatch)
        let (traced, steps) = DecisionEngine.trace(staging.experiences[0], at: 0, in: staging, for: input("v"))
        #expect(traced.reason == .environmentMismatch)
        #expect(steps == [.environmentMismatch(experience: "staging", sdk: "production")])
    }

    /// The silent path (compiled rule programs, the call's location memo) and the traced path
    /// (rules evaluated one by one) are written apart; on every fixture config, for random
    /// visitors with attributes and location properties drawn from the config's own rule values,
    /// they reach the same decision, and a memo shared across a call's experiences changes none.
    @Test(arguments: ["js-sdk-test-config.json", "rules-test-config.json", "static-config.json"])
    func theSilentAndTracedPathsAgreeAndTheMemoChangesNothing(_ fixture: String) throws {
        let config = try installed(fixture: fixture)
        let values: [String: [JSONValue]] = [
            "url": ["https://convert.com/", "https://example.com/"], "varName1": ["value1", "other"],
            "varName2": ["value2", "x"], "varName3": ["something", "nothing"], "desktop": [true, false],
            "mobile": [true, false], "browser": ["CH", "FF"], "feature": [5, 4, "https://test.com"],
            "location": ["events", "pricing", "statistics", "home"], "screen": ["home", "cart"],
        ]
        var generator = SystemRandomNumberGenerator()
        var decided = 0, compared = 0
        for n in 0..<300 {
            func draw() -> [String: JSONValue] {
                var picked: [String: JSONValue] = [:]
                for (key, options) in values where Bool.random(using: &generator) {
                    picked[key] = options.randomElement(using: &generator)
                }
                return picked
            }
            var stored = VisitorData()
            if n % 3 == 0, let experience = config.experiences.randomElement(using: &generator),
               let variation = experience.variations.randomElement(using: &generator) {
                stored = VisitorData(bucketing: [experience.id: variation.id])
            }
            let call = input("visitor-\(n)-\(UInt32.random(in: 0...UInt32.max, using: &generator))", attributes: draw(),
                             location: draw(), stored: stored)
            var shared = RuleMemo()
            for (position, experience) in config.experiences.enumerated() {
                var own = RuleMemo()
                let alone = DecisionEngine.decide(experience, at: position, in: config, for: call, memo: &own)
                let withShared = DecisionEngine.decide(experience, at: position, in: config, for: call, memo: &shared)
                let (traced, _) = DecisionEngine.trace(experience, at: position, in: config, for: call)
                #expect(alone.reason == traced.reason && alone.variationIndex == traced.variationIndex,
                        "\(fixture) \(experience.key) \(call.visitorId): silent \(alone.reason), traced \(traced.reason)")
                #expect(withShared.reason == alone.reason && withShared.variationIndex == alone.variationIndex)
                compared += 1
                if alone.variationIndex != nil { decided += 1 }
            }
        }
        #expect(compared > 0)
        #expect(decided > 0, "\(fixture): some visitors get a variation, so the comparison reaches bucketing")
    }

    /// The cross-SDK mutual-exclusion rows: a third experience whose audience holds the row's
    /// `bucketed_into_experience_key` rule is decided with the row's stored decisions (the
    /// engine reads one stored record, so a row's "store only" variant is the same input).
    @Test func theMutualExclusionRowsGateAnExperienceAsEverySDKDoes() throws {
        struct Fixture: Decodable {
            struct Row: Decodable {
                let row: Int
                let description: String
                let storedBucketing: [String: String]
                let ruleValue: String
                let negated: Bool
                let expectedMatched: Bool
                let expectWarn: Bool
            }
            let rows: [Row]
        }
        let data = try Data(contentsOf: fixtures.appendingPathComponent("mutual-exclusion-rule-fixture.json"))
        let fixture = try JSONDecoder().decode(Fixture.self, from: data)
        let top = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let base = try #require((top["config"] as? [String: Any])?["experiences"] as? [[String: Any]])
        #expect(fixture.rows.count == 8)
        for row in fixture.rows {
            let rule: [String: Any] = ["rule_type": "bucketed_into_experience_key",
                                       "matching": ["match_type": "equals", "negated": row.negated], "value": row.ruleValue]
            let gated: [String: Any] = [
                "id": "100333", "key": "gated", "name": "gated", "type": "a/b_fullstack", "status": "active",
                "audiences": ["700"], "variations": [["id": "100903", "name": "only", "traffic_allocation": 100]],
            ]
            let document: [String: Any] = [
                "account_id": "100", "project": ["id": "200"], "experiences": base + [gated],
                "audiences": [["id": "700", "name": "not-in", "type": "transient",
                               "rules": ["OR": [["AND": [["OR_WHEN": [rule]]]]]]]],
            ]
            let config = try installed(try JSONSerialization.data(withJSONObject: document))
            let position = try #require(config.experiencePosition(key: "gated"))
            var memo = RuleMemo()
            let decision = DecisionEngine.decide(config.experiences[position], at: position, in: config,
                                                 for: input("row-\(row.row)", stored: VisitorData(bucketing: row.storedBucketing)),
                                                 memo: &memo)
            #expect(decision.reason == (row.expectedMatched ? .bucketed : .audienceNotMatched), "row \(row.row): \(row.description)")
            #expect(decision.unresolvedExperienceKeys == (row.expectWarn ? [row.ruleValue] : []), "row \(row.row)")
        }
    }
}
