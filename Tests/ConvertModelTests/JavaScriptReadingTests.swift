import ConvertBucketing
import ConvertModel
import ConvertRules
import Foundation
import Testing

// How the config's loosely typed fields are read, with the JavaScript SDK's results (its
// `Number()` coercions, truthiness tests and bucket arithmetic) as the expected values.

/// The one experience of a config with these variations and extra experience fields.
private func experience(_ variations: [JSONValue], _ extra: [String: JSONValue] = [:]) throws -> (Experience, DecodedConfig) {
    var fields: [String: JSONValue] = ["id": "100", "key": "e", "variations": .array(variations)]
    fields.merge(extra) { _, new in new }
    let decoded = try ConfigDecoder.decode(json: ["account_id": "1", "project": ["id": "2"], "experiences": [.object(fields)]])
    return (try #require(decoded.config.experiences.first), decoded)
}

@Suite struct TrafficAllocationReadingTests {
    @Test func falsyZeroAndNegativeAllocationsExcludeTheArmAndOthersWeighTheirNumber() throws {
        let (e, _) = try experience([
            ["id": "1", "traffic_allocation": .null], ["id": "2", "traffic_allocation": ""],
            ["id": "3", "traffic_allocation": 0], ["id": "4", "traffic_allocation": false],
            ["id": "5", "traffic_allocation": -5], ["id": "6", "traffic_allocation": "25"],
            ["id": "7", "traffic_allocation": true], ["id": "8", "traffic_allocation": [30]], ["id": "9"],
        ])
        let ranges = e.bucketTable.ranges
        #expect(ranges.map(\.variationId) == ["6", "7", "8", "9"])
        #expect(ranges.map(\.lower) == [0, 2500, 2600, 5600])
        #expect(ranges.map(\.upper) == [2500, 2600, 5600, 15600])
    }

    @Test func aNonNumericWeightMakesThatArmAndEveryLaterArmUnwinnable() throws {
        let (e, decoded) = try experience([
            ["id": "1", "traffic_allocation": 40], ["id": "2", "traffic_allocation": "lots"],
            ["id": "3", "traffic_allocation": 30],
        ])
        #expect(e.bucketTable.variation(forValue: 100) == "1")
        #expect(e.bucketTable.variation(forValue: 4500) == nil)
        #expect(e.bucketTable.variation(forValue: 9000) == nil)
        #expect(e.variations[1].trafficAllocation?.isNaN == true)
        #expect(decoded.degradations.map(\.kind) == [.coercedField])
        #expect(decoded.degradations.first?.path == "experiences[0].variations[1].traffic_allocation")
    }

    @Test func anchoredLayoutCountsANonNumericAllocationAsOneHundred() throws {
        let (e, _) = try experience([
            ["id": "a", "traffic_allocation": "abc"], ["id": "b", "traffic_allocation": 100],
            ["id": "c", "traffic_allocation": .null],
        ], ["version": 12])
        #expect(e.bucketTable.layout == .anchored)
        // total 200 (null reads 0): a is anchored at 0 and 10000 wide, so it takes every value.
        #expect(e.bucketTable.variation(forValue: 7000) == "a")
        #expect(e.bucketTable.ranges.map(\.variationId) == ["a", "b"])
        #expect(e.bucketTable.ranges[1].lower == 5000)
    }

    @Test func armsWithAnEmptyIdAreNeverBucketed() throws {
        let (packed, _) = try experience([["id": ""], ["id": "2"]])
        #expect(packed.bucketTable.ranges.map(\.variationId) == ["2"])
        #expect(packed.bucketTable.ranges.first?.upper == 10000)
        let (anchored, _) = try experience([["id": ""], ["id": "2"]], ["version": 12])
        #expect(anchored.bucketTable.ranges.map(\.variationId) == ["2"])
        #expect(anchored.bucketTable.ranges.first?.lower == 0)
    }
}

@Suite struct VariationStatusReadingTests {
    @Test func aFalsyStatusIsRunningAndAnyOtherValueButRunningIsNot() throws {
        let statuses: [JSONValue?] = ["", false, 0, .null, nil, "running", "Running", true, 1, "paused"]
        let (e, _) = try experience(statuses.enumerated().map { i, status -> JSONValue in
            var fields: [String: JSONValue] = ["id": .string(String(i + 1))]
            if let status { fields["status"] = status }
            return .object(fields)
        })
        #expect(e.variations.map(\.isActive) == [true, true, true, true, true, true, false, false, false, false])
        #expect(e.bucketTable.ranges.map(\.variationId) == ["1", "2", "3", "4", "5", "6"])
    }
}

@Suite struct ExperienceFieldReadingTests {
    @Test func versionIsReadWithNumberForTheLayoutGate() throws {
        let anchored: [JSONValue] = ["12", [12], "Infinity", 12.5, " 12 ", "0x10"]
        let packed: [JSONValue] = [true, "abc", .null, "11", 11, [12, 13], ["v": 12], ""]
        for version in anchored {
            #expect(try experience([["id": "1"]], ["version": version]).0.bucketTable.layout == .anchored, "\(version)")
        }
        for version in packed {
            #expect(try experience([["id": "1"]], ["version": version]).0.bucketTable.layout == .packed, "\(version)")
        }
        #expect(try experience([["id": "1"]]).0.bucketTable.layout == .packed)
    }

    @Test func anEmptyOrNullEnvironmentLimitsNothing() throws {
        for environment: JSONValue in ["", .null, false, 0] {
            #expect(try experience([["id": "1"]], ["environment": environment]).0.environment == nil, "\(environment)")
        }
        #expect(try experience([["id": "1"]], ["environment": "live"]).0.environment == "live")
    }
}
