import ConvertJSON
import ConvertStorage
import ConvertVisitor
import Foundation

/// Behaviour every ``VisitorDataBackend`` must show. Run it from your own tests against a
/// fresh backend (an empty Redis database, say):
///
/// ```swift
/// try await VisitorDataBackendContract.verify(MyBackend(...))
/// ```
public enum VisitorDataBackendContract {
    /// Checks `backend`, which must hold no data for `namespace`; throws ``ContractViolation``
    /// naming the first broken promise.
    public static func verify(_ backend: any VisitorDataBackend, namespace: String = "1-2") async throws {
        func key(_ id: String) -> VisitorKey { VisitorKey(namespace: namespace, visitorId: id) }
        func check(_ condition: Bool, _ message: @autoclosure () -> String) throws {
            if !condition { throw ContractViolation(message()) }
        }
        let unknown = try await backend.load(key("unknown"))
        try check(unknown == nil, "an unknown visitor must load as nil")

        let first = VisitorData(bucketing: ["e1": "a"], goals: ["g1"], segments: VisitorSegments(country: "DE"),
                                locations: ["pricing"])
        let saved = try await backend.save(key("v1"), first)
        try check(saved.bucketing == ["e1": "a"] && saved.goals == ["g1"], "save must return what it stored")
        let loaded = try await backend.load(key("v1"))
        try check(loaded?.bucketing == ["e1": "a"], "decisions must load back")
        try check(loaded?.goals == ["g1"], "goals must load back")
        try check(loaded?.segments.country == "DE", "segments must load back")
        try check(loaded?.locations == ["pricing"], "locations must load back")

        let second = try await backend.save(key("v1"), VisitorData(bucketing: ["e1": "b", "e2": "c"], goals: ["g2"]))
        try check(second.bucketing == ["e1": "a", "e2": "c"], "the first stored decision must win: \(second.bucketing)")
        try check(second.goals == ["g1", "g2"], "goals must be united: \(second.goals)")
        try check(second.segments.country == "DE", "saving without segments must keep the stored ones")

        try check(try await backend.recordGoalOnce(key("v2"), goalId: "g") == true, "the first record of a goal must win")
        try check(try await backend.recordGoalOnce(key("v2"), goalId: "g") == false, "a second record must lose")
        try check(try await backend.load(key("v2"))?.goals.contains("g") == true, "a recorded goal must load back")

        let winners = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<50 { group.addTask { try await backend.recordGoalOnce(key("race"), goalId: "g") } }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        try check(winners == 1, "concurrent records of one goal must have one winner, got \(winners)")

        _ = try await backend.save(key("shapes"), VisitorData(bucketing: [:], segmentValues: SegmentShapes.values))
        let shapes = try await backend.load(key("shapes"))?.segmentValues
        try check(shapes == SegmentShapes.values, "segment values must load back as given: \(shapes ?? [:])")

        let records = (0..<20).map { (key("batch-\($0)"), VisitorData(bucketing: ["e": "v\($0)"])) }
        let stored = try await backend.saveAll(records)
        try check(stored.count == 20 && stored.enumerated().allSatisfy { $1.bucketing == ["e": "v\($0)"] },
                  "saveAll must return each record, in order")
        let other = VisitorKey(namespace: namespace + "-other", visitorId: "v1")
        try check(try await backend.load(other) == nil, "namespaces must not share records")

        // Claims: the first stored decision holds, for every claimer, and loads back; only the
        // claim that stored it is first, even when another claims the same variation.
        func claim(_ id: String, _ experience: String, _ variation: String) throws -> VariationClaim {
            try backend.claimVariation(key(id), experienceId: experience, variationId: variation)
        }
        try check(try claim("claim", "e1", "a") == VariationClaim(variationId: "a", isFirst: true),
                  "the first claim must hold its own variation, first")
        try check(try claim("claim", "e1", "b") == VariationClaim(variationId: "a", isFirst: false),
                  "a second claimer must get the first claimer's variation, not first")
        try check(try claim("claim", "e1", "a") == VariationClaim(variationId: "a", isFirst: false),
                  "a second claimer of the same variation must not be first")
        try check(try await backend.claimVariationLater(key("claim"), experienceId: "e1", variationId: "c")
                  == VariationClaim(variationId: "a", isFirst: false), "a claim made later must get the first claimer's variation")
        try check(try await backend.claimVariationLater(key("claim"), experienceId: "e2", variationId: "d")
                  == VariationClaim(variationId: "d", isFirst: true), "a claim for another experience must hold its own")
        let claimed = try await backend.load(key("claim"))
        try check(claimed?.bucketing == ["e1": "a", "e2": "d"], "claimed decisions must load back: \(claimed?.bucketing ?? [:])")
        _ = try await backend.save(key("claim-saved"), VisitorData(bucketing: ["e1": "x"]))
        try check(try claim("claim-saved", "e1", "y") == VariationClaim(variationId: "x", isFirst: false),
                  "a claim must get a decision stored by a save")
        let claims = try await withThrowingTaskGroup(of: VariationClaim.self) { group in
            for claimer in 0..<20 {
                group.addTask { try await backend.claimVariationLater(key("claim-race"), experienceId: "e", variationId: "v\(claimer % 2)") }
            }
            return try await group.reduce(into: [VariationClaim]()) { $0.append($1) }
        }
        try check(Set(claims.map(\.variationId)).count == 1 && claims.filter(\.isFirst).count == 1,
                  "concurrent claimers must all get the same variation, one of them first: \(claims)")

        // Writes behind: decisions where none is, goals added, locations and segments replaced.
        let kept = try await backend.merge([
            VisitorDataChanges(key: key("claim"), decisions: ["e1": "b", "e3": "f"], goals: ["g9"], locations: ["home"],
                               segmentValues: ["country": "FR"]),
            VisitorDataChanges(key: key("merged"), all: VisitorData(bucketing: ["e1": "z"], goals: ["g1"], locations: ["pricing"])),
        ])
        try check(kept == [["e1": "a"], [:]], "merge must return the decisions stored first that differ: \(kept)")
        let merged = try await backend.load(key("claim"))
        try check(merged?.bucketing == ["e1": "a", "e2": "d", "e3": "f"], "merged decisions must load back: \(merged?.bucketing ?? [:])")
        try check(merged?.goals == ["g9"] && merged?.locations == ["home"] && merged?.segments.country == "FR",
                  "merged goals, locations and segments must load back")
        try check(try await backend.load(key("merged"))?.bucketing == ["e1": "z"], "a whole record must load back")
    }
}
