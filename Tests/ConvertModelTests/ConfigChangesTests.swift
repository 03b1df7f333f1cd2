import ConvertModel
import ConvertRules
import ConvertTesting
import Foundation
import Testing

/// The baseline fixture, changed by `change` and decoded.
private func baseline(_ change: (inout [String: Any]) throws -> Void = { _ in }) throws -> ProjectConfig {
    var json = try #require(try JSONSerialization.jsonObject(with: Fixtures.data(.cdnConfigBaseline)) as? [String: Any])
    try change(&json)
    return try ConfigDecoder.decode(JSONSerialization.data(withJSONObject: json)).config
}

private func list(_ json: [String: Any], _ key: String) throws -> [[String: Any]] {
    try #require(json[key] as? [[String: Any]])
}

@Suite struct ConfigChangesTests {
    @Test func theSameContentHasNoChanges() throws {
        let changes = ConfigChanges(from: try baseline(), to: try baseline { $0["_s_t"] = "2031-01-01" })
        #expect(changes.isEmpty)
        #expect(changes == ConfigChanges())
        #expect(changes.description == "no changes the SDK reads")
    }

    @Test func addedRemovedAndChangedEntitiesAreNamedInConfigOrder() throws {
        let old = try baseline()
        let new = try baseline { json in
            var experiences = try list(json, "experiences")
            var copy = experiences[3]
            copy["id"] = "900"
            copy["key"] = "new-experience"
            copy["variations"] = [["id": "901", "key": "only", "traffic_allocation": 100]]
            experiences.removeFirst()                   // test-experience-ab-fullstack-1 and its variations
            experiences.insert(copy, at: 1)
            json["experiences"] = experiences
            var features = try list(json, "features")
            features[0]["variables"] = [["key": "caption", "type": "string"]]
            json["features"] = features
            var audiences = try list(json, "audiences")
            audiences[0]["type"] = "transient"
            json["audiences"] = audiences
            var locations = try list(json, "locations")
            locations.append(["id": "77", "key": "checkout", "rules": NSNull()])
            json["locations"] = locations
            var segments = try list(json, "segments")
            segments[0]["name"] = "renamed"
            json["segments"] = segments
        }
        let changes = ConfigChanges(from: old, to: new)
        #expect(changes.experiences.added == [ConfigEntityReference(id: "900", key: "new-experience")])
        #expect(changes.experiences.removed == [ConfigEntityReference(id: "100334665", key: "test-experience-ab-fullstack-1")])
        #expect(changes.experiences.changed.isEmpty)
        #expect(changes.variations.added == [ConfigEntityReference(id: "901", key: "only")])
        #expect(changes.variations.removed.map(\.id) == ["1003142550", "1003142551"])
        #expect(changes.features == .init(changed: [ConfigEntityReference(id: "10031", key: "feature-1")]))
        #expect(changes.audiences == .init(changed: [ConfigEntityReference(id: "10033684", key: "adv-audience")]))
        #expect(changes.locations == .init(added: [ConfigEntityReference(id: "77", key: "checkout")]))
        #expect(changes.segments.changed.map(\.description) == ["test-segment-1"])
        #expect(changes.goals.isEmpty && changes.archivedExperiences.isEmpty && !changes.projectChanged)
        #expect(changes.description == "experiences +1 -1, variations +1 -2, features ~1, audiences ~1, segments ~1, locations +1")
        #expect(changes.experiences.affects(id: "900") && changes.experiences.affects(key: "test-experience-ab-fullstack-1"))
        #expect(!changes.experiences.affects(key: "sample_ab_test"))
    }

    @Test func anEntityInsertedBeforeOthersChangesOnlyItself() throws {
        // Experiences refer to audiences and locations by position internally; an insertion
        // shifts those positions but changes no experience.
        let new = try baseline { json in
            var audiences = try list(json, "audiences")
            audiences.insert(["id": "5", "key": "first", "type": "permanent", "rules": NSNull()], at: 0)
            json["audiences"] = audiences
            var locations = try list(json, "locations")
            locations.insert(["id": "6", "key": "first-location", "rules": NSNull()], at: 0)
            json["locations"] = locations
        }
        let changes = ConfigChanges(from: try baseline(), to: new)
        #expect(changes.experiences.isEmpty)
        #expect(changes.audiences == .init(added: [ConfigEntityReference(id: "5", key: "first")]))
        #expect(changes.locations == .init(added: [ConfigEntityReference(id: "6", key: "first-location")]))
    }

    @Test func archivingAndTheProjectAreReported() throws {
        let old = try baseline { $0["archived_experiences"] = ["100346442"] }
        let new = try baseline { json in
            json["archived_experiences"] = ["100334667", "404"]
            var project = try #require(json["project"] as? [String: Any])
            project["utc_offset"] = "3600"
            json["project"] = project
        }
        let changes = ConfigChanges(from: old, to: new)
        #expect(changes.archivedExperiences.added == [ConfigEntityReference(id: "100334667", key: "test-experience-ab-fullstack-3"),
                                                      ConfigEntityReference(id: "404", key: nil)])
        #expect(changes.archivedExperiences.removed == [ConfigEntityReference(id: "100346442", key: "sample_ab_test")])
        #expect(changes.projectChanged)
        #expect(changes.experiences.isEmpty, "archiving leaves the experience itself unchanged")
        #expect(changes.description == "archived 2, unarchived 1, project")
        #expect(ConfigChanges(from: new, to: old).archivedExperiences.removed.map(\.id) == ["100334667", "404"])
    }

    @Test func aRepeatedIdIsTheFirstEntityWithIt() throws {
        let new = try baseline { json in
            var goals = try list(json, "goals")
            var twin = goals[0]
            twin["key"] = "twin"
            goals.append(twin)
            json["goals"] = goals
        }
        #expect(ConfigChanges(from: try baseline(), to: new).isEmpty, "lookups never reach the second goal 100322782")
    }

    @Test func entityLookupsByKindMatchTheConfigsOwnLookups() throws {
        let config = try baseline()
        for experience in config.experiences {
            #expect(config.entity(.experience, key: experience.key) == experience)
            #expect(config.entity(.experience, id: experience.id) == experience)
            for variation in experience.variations {
                #expect(config.entity(.variation, id: variation.id) == variation)
                if let key = variation.key { #expect(config.entity(.variation, key: key) == variation) }
            }
        }
        for goal in config.goals { #expect(config.entity(.goal, key: goal.key) == goal) }
        for feature in config.features { #expect(config.entity(.feature, id: feature.id) == feature) }
        for audience in config.audiences { #expect(config.entity(.audience, key: audience.key ?? "") == audience) }
        for location in config.locations { #expect(config.entity(.location, key: location.key ?? "") == location) }
        for segment in config.segments { #expect(config.entity(.segment, id: segment.id) == segment) }
    }
}
