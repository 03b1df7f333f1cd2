import ConvertRules
import ConvertStorage
import ConvertVisitor
import Testing

/// Report values read in place answer as the dictionary `VisitorSegments.reportValues(in:)` builds.
@Suite struct ReportValuesTests {
    static let attributeSets: [[String: JSONValue]] = [
        ["desktop": "true"],
        ["browser": "FF"],
        ["desktop": "true", "browser": "FF"],
        ["country": "US", "devices": ["desktop", "tablet"], "customSegments": "s1", "plan": "pro"],
        ["customSegments": ["s1", "s2"], "visitorType": .null, "source": 3],
        ["a": 1, "b": 2, "c": 3, "d": 4, "browser": "CH", "campaign": ["x": 1]],
    ]

    @Test func readInPlaceAsTheBuiltDictionary() {
        for attributes in Self.attributeSets {
            let built = VisitorSegments.reportValues(in: attributes)
            guard let values = ReportValues(of: attributes) else {
                #expect(built.isEmpty, "\(attributes)")
                continue
            }
            #expect(values.dictionary == built)
            for key in Set(attributes.keys).union(VisitorSegments.reportKeys) {
                #expect(values.member(key) == built[key], "\(key) in \(attributes)")
            }
            var seen: [String: JSONValue] = [:]
            values.forEach { seen[$0] = $1 }
            #expect(seen == built)
            for other in Self.attributeSets.map(VisitorSegments.reportValues(in:)) + [built.merging(["country": "DE"]) { $1 }] {
                #expect(values.equals(other) == (other == built), "\(attributes) against \(other)")
            }
        }
    }

    @Test func newVisitorsStoringTheSameOrOtherValuesInTurnKeepTheirOwn() {
        // Stored one after another on one thread, as a server stores its visitors.
        for round in 0..<3 {
            for attributes in Self.attributeSets + Self.attributeSets.reversed() {
                guard let values = ReportValues(of: attributes) else { continue }
                var data = VisitorData()
                let changed = data.storeSegmentValues(values)
                #expect(changed)
                #expect(data.segmentValues == values.dictionary, "round \(round): \(attributes)")
            }
        }
    }

    @Test func storingChangesNothingAsTheDictionaryDoes() {
        let stored: [[String: JSONValue]] = [
            [:], ["browser": "FF"], ["browser": "CH"], ["customSegments": "s1"], ["customSegments": ["s1", "s2"]],
            ["country": "US", "devices": ["desktop", "tablet"], "customSegments": "s1"], ["campaign": ["x": 1]],
        ]
        for attributes in Self.attributeSets {
            guard let values = ReportValues(of: attributes) else { continue }
            for old in stored {
                var viaValues = VisitorData(bucketing: [:], segmentValues: old)
                var viaDictionary = viaValues
                let changed = viaValues.storeSegmentValues(values)
                #expect(!changed == VisitorSegments.storingChangesNothing(values.dictionary, over: old),
                        "\(attributes) over \(old)")
                #expect(changed == viaDictionary.storeSegmentValues(values.dictionary))
                #expect(viaValues == viaDictionary)
            }
        }
    }
}
