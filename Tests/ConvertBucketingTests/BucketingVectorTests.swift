import ConvertBucketing
import ConvertTesting
import Foundation
import Testing

@Suite struct BucketingVectorTests {
    @Test func all74HashVectorsGiveTheirValueAndVariation() throws {
        let vectors = try Fixtures.hashParityVectors()
        #expect(vectors.count == 74)
        for v in vectors {
            let value = BucketValue.of(experienceId: v.experienceId, visitorId: v.visitorId, seed: v.seed)
            #expect(value == v.expectedValue, "\(v.description)")
            // Every vector's buckets are varA then varB, which is also their sorted order.
            let arms = v.buckets.keys.sorted().map { BucketArm(id: $0, trafficAllocation: v.buckets[$0]) }
            let table = BucketTable(arms: arms, layout: .packed)
            #expect(table.variation(forValue: value) == v.expectedVariationId, "\(v.description)")
        }
    }

    @Test func all59CrossSDKVectorsPass() throws {
        let vectors = try Fixtures.bucketingVectors()
        #expect(vectors.count == 59)
        for v in vectors {
            let arms = v.variations.map {
                BucketArm(id: $0.id, trafficAllocation: $0.trafficAllocation,
                          isActive: $0.status == nil || $0.status == "running")
            }
            let table = BucketTable(arms: arms, layout: BucketLayout(version: v.version))
            #expect(table.layout == (v.version > 11 ? .anchored : .packed))
            #expect(table.variation(experienceId: v.experienceId, visitorId: v.visitorId) == v.expected,
                    "\(v.description)")
        }
    }

    @Test func allocationFlipVisibleInPackedButNotAnchored() {
        let visitor = "thirds-flip-V1-to-O-66"
        let value = BucketValue.of(experienceId: "900000001", visitorId: visitor)
        func arms(_ share: Double) -> [BucketArm] {
            ["O", "V1", "V2"].map { BucketArm(id: $0, trafficAllocation: share) }
        }
        let packedBefore = BucketTable(arms: arms(5), layout: .packed).variation(forValue: value)
        let packedAfter = BucketTable(arms: arms(100.0 / 12), layout: .packed).variation(forValue: value)
        #expect(packedBefore == "V1")
        #expect(packedAfter == "O")
        let anchoredBefore = BucketTable(arms: arms(5), layout: .anchored).variation(forValue: value)
        let anchoredAfter = BucketTable(arms: arms(100.0 / 12), layout: .anchored).variation(forValue: value)
        if let anchoredBefore {
            #expect(anchoredAfter == anchoredBefore)
        }
    }
}
