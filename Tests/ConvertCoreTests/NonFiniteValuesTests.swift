import ConvertRules
import ConvertStorage
import Foundation
import Testing

/// The record encoding of NaN and the infinities among segment values.
struct NonFiniteValuesTests {
    private let values: [String: JSONValue] = [
        "country": .number(.nan), "browser": "FF", "devices": .array(["a", .number(-.infinity)]),
        "campaign": .object(["x": .object(["y": .number(.infinity)])]),
    ]

    @Test func aRecordEncodedAndDecodedKeepsThem() throws {
        let data = VisitorData(bucketing: ["1": "2"], segmentValues: values)
        let decoded = try JSONDecoder().decode(VisitorData.self, from: try JSONEncoder().encode(data))
        #expect(decoded.segmentValues["country"]?.numberValue?.isNaN == true)
        #expect(decoded.segmentValues["devices"] == .array(["a", .number(-.infinity)]))
        #expect(decoded.segmentValues["campaign"] == .object(["x": .object(["y": .number(.infinity)])]))
        #expect(decoded.segmentValues["browser"] == "FF")
        #expect(decoded.bucketing == ["1": "2"])
    }

    @Test func theListInsideASegmentsObjectIsReadAndLeftOut() {
        let listed = NonFiniteValues.listing(in: values)
        let nulled = listed.mapValues { value -> JSONValue in
            // What JSON keeps of them.
            guard let data = try? JSONEncoder().encode(value), let back = try? JSONDecoder().decode(JSONValue.self, from: data) else {
                return .null
            }
            return back
        }
        #expect(nulled["country"] == .null)
        var data = VisitorData()
        data.segmentValues = NonFiniteValues.restoringListed(in: nulled)
        #expect(data.segmentValues.count == 4, "only report keys are kept")
        #expect(data.segmentValues["country"]?.numberValue?.isNaN == true)
        #expect(data.segmentValues["campaign"]?["x"]?["y"] == .number(.infinity))
    }

    @Test func entriesThatNameNoNullAreIgnored() {
        let restored = NonFiniteValues.restoring([.array(["browser", "NaN"]), .array(["devices", 5, "Infinity"]), .array(["nope", "NaN"])],
                                                 in: ["browser": "FF", "devices": .array(["a"])])
        #expect(restored == ["browser": "FF", "devices": .array(["a"])])
    }
}
