import ConvertJSON
@testable import ConvertSharedStore
import ConvertStorage
import ConvertTesting
import ConvertVisitor
import Testing

/// What a load merges (the stored record with this instance's copy), against the rule written
/// out on the string views: stored decisions first, goals (exposure markers with them) and
/// locations united, segments this instance's over the stored ones while it has unsaved changes,
/// else the stored ones unless there are none.
@Suite struct SharedStoreMergeTests {
    private func reference(stored: VisitorData, local: VisitorData, localUnsaved: Bool) -> VisitorData {
        var out = stored
        var bucketing = stored.bucketing
        for (experience, variation) in local.bucketing where bucketing[experience] == nil { bucketing[experience] = variation }
        out.bucketing = bucketing
        out.storedGoals = stored.storedGoals.union(local.storedGoals)
        out.locations = stored.locations.union(local.locations)
        if localUnsaved {
            out.segmentValues = VisitorSegments.storing(local.segmentValues, over: stored.segmentValues)
        } else if stored.segmentValues.isEmpty {
            out.segmentValues = local.segmentValues
        }
        return out
    }

    private func randomData(_ generator: inout SeededGenerator) -> VisitorData {
        func some(_ prefix: String, _ most: Int) -> [String] {
            (0..<Int.random(in: 0...most, using: &generator)).map { _ in prefix + String(Int.random(in: 0..<6, using: &generator)) }
        }
        var bucketing: [String: String] = [:]
        for experience in some("e", 4) { bucketing[experience] = "v" + String(Int.random(in: 0..<3, using: &generator)) }
        var segments: [String: JSONValue] = [:]
        if Bool.random(using: &generator) { segments["browser"] = .string(["FF", "CH"].randomElement(using: &generator)!) }
        if Bool.random(using: &generator) { segments["country"] = .number(Double(Int.random(in: 1...3, using: &generator))) }
        if Bool.random(using: &generator) { segments["customSegments"] = .array(some("s", 2).map { .string($0) }) }
        var data = VisitorData(bucketing: bucketing, goals: Set(some("g", 3)), segmentValues: segments, locations: Set(some("l", 3)))
        if Bool.random(using: &generator) {
            data.setExposureMarker(InternedId(ExposureMarker.pending(experienceId: "e1", variationId: "v1")), experienceId: "e1")
        }
        return data
    }

    /// What a write behind sends: new decisions and goals, the locations and segments when they
    /// differ from what the backend holds, against the rule on the string views.
    @Test func theChangesWrittenAreTheDifferenceOnTheStringViews() {
        var generator = SeededGenerator(seed: 47)
        let key = VisitorKey(namespace: "1-2", visitorId: "v")
        for round in 0..<2_000 {
            let base = round % 5 == 0 ? VisitorData() : randomData(&generator)
            // Mostly the base with a little added, as a visitor's next changes are.
            var data = round % 3 == 0 ? randomData(&generator)
                : WriteBehindVisitorStore.merged(stored: base, local: randomData(&generator), localUnsaved: false)
            if round % 7 == 0 { data.adoptSegments(of: base) }
            let pending = WriteBehindVisitorStore.Pending(mark: 0, base: base, renewed: round % 2 == 0, latest: data,
                                                          version: 0, dataSet: 0)
            let changes = WriteBehindVisitorStore.changes(key, data, over: pending)
            let expectedDecisions = data.bucketing.filter { base.bucketing[$0.key] == nil }
            #expect(changes.decisions == expectedDecisions)
            #expect(changes.goals == data.storedGoals.subtracting(base.storedGoals))
            #expect(changes.locations == (data.locations == base.locations ? nil : data.locations))
            #expect(changes.segmentValues == (data.segmentValues == base.segmentValues ? nil : data.segmentValues))
            #expect(changes.renewsExpiry == (round % 2 != 0))
        }
    }

    @Test func theMergeIsTheRuleOnTheStringViews() {
        var generator = SeededGenerator(seed: 48)
        for _ in 0..<2_000 {
            let stored = randomData(&generator), local = randomData(&generator)
            let unsaved = Bool.random(using: &generator)
            let merged = WriteBehindVisitorStore.merged(stored: stored, local: local, localUnsaved: unsaved)
            let expected = reference(stored: stored, local: local, localUnsaved: unsaved)
            #expect(merged == expected, "stored \(stored), local \(local), unsaved \(unsaved)")
            #expect(merged.bucketing == expected.bucketing && merged.storedGoals == expected.storedGoals
                    && merged.locations == expected.locations && merged.segmentValues == expected.segmentValues)
        }
    }
}
