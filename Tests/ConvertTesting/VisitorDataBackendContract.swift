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
    }
}
