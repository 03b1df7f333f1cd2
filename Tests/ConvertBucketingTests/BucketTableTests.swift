import ConvertBucketing
import Testing

@Suite struct BucketTableTests {
    @Test func packedWalksIntegerIdsAscendingThenOthersInConfigOrder() {
        let arms = ["b", "100", "7", "a", "017"].map { BucketArm(id: $0, trafficAllocation: 10) }
        let table = BucketTable(arms: arms, layout: .packed)
        #expect(table.ranges.map(\.variationId) == ["7", "100", "b", "a", "017"])
        #expect(table.ranges.map(\.lower) == [0, 1000, 2000, 3000, 4000])
        #expect(table.variation(forValue: 999) == "7")
        #expect(table.variation(forValue: 1000) == "100")
        #expect(table.variation(forValue: 5000) == nil)
    }

    @Test func javaScriptArrayIndexRules() {
        #expect(JavaScriptKeyOrder.arrayIndex("0") == 0)
        #expect(JavaScriptKeyOrder.arrayIndex("4294967294") == 4_294_967_294)
        #expect(JavaScriptKeyOrder.arrayIndex("4294967295") == nil)
        #expect(JavaScriptKeyOrder.arrayIndex("01") == nil)
        #expect(JavaScriptKeyOrder.arrayIndex("-1") == nil)
        #expect(JavaScriptKeyOrder.arrayIndex("1.0") == nil)
        #expect(JavaScriptKeyOrder.arrayIndex("") == nil)
    }

    @Test func packedSkipsStoppedAndZeroArmsAndDefaultsMissingTo100() {
        let arms = [
            BucketArm(id: "x", trafficAllocation: 30, isActive: false),
            BucketArm(id: "y", trafficAllocation: 0),
            BucketArm(id: "z", trafficAllocation: nil),
        ]
        let table = BucketTable(arms: arms, layout: .packed)
        #expect(table.ranges == [BucketTable.Range(variationId: "z", lower: 0, upper: 10_000)])
        #expect(table.variation(forValue: 9999) == "z")
    }

    @Test func packedKeepsFractionalCumulativeWithoutTruncation() {
        let share = 100.0 / 3
        let table = BucketTable(arms: ["a", "b", "c"].map { BucketArm(id: $0, trafficAllocation: share) }, layout: .packed)
        #expect(table.variation(forValue: 3333) == "a")
        #expect(table.variation(forValue: 3334) == "b")
        #expect(table.variation(forValue: 9999) == "c")
    }

    @Test func anchoredArmsOnlyGrowInPlace() {
        func table(_ a: Double, _ b: Double) -> BucketTable {
            BucketTable(arms: [BucketArm(id: "a", trafficAllocation: a), BucketArm(id: "b", trafficAllocation: b)],
                        layout: .anchored)
        }
        let small = table(10, 10), large = table(40, 40)
        #expect(small.ranges.map(\.lower) == [0, 5000])
        for value in stride(from: 0, to: 10_000, by: 7) {
            if let before = small.variation(forValue: value) {
                #expect(large.variation(forValue: value) == before, "value \(value)")
            }
        }
    }

    @Test func anchoredInactiveArmsKeepTheirShareButTakeNoTraffic() {
        let arms = [BucketArm(id: "a", trafficAllocation: 50), BucketArm(id: "b", trafficAllocation: 50, isActive: false)]
        let table = BucketTable(arms: arms, layout: .anchored)
        #expect(table.variation(forValue: 4999) == "a")
        #expect(table.variation(forValue: 5000) == nil)
        #expect(BucketTable(arms: [BucketArm(id: "a", trafficAllocation: 0)], layout: .anchored).ranges.isEmpty)
    }

    @Test func layoutGate() {
        #expect(BucketLayout(version: nil) == .packed)
        #expect(BucketLayout(version: 11) == .packed)
        #expect(BucketLayout(version: 12) == .anchored)
        #expect(BucketLayout(version: 11.5) == .anchored)
    }

    @Test func nanAllocationCountsAs100() {
        #expect(BucketArm(id: "a", trafficAllocation: .nan).allocation == 100)
        #expect(BucketArm(id: "a", trafficAllocation: nil).allocation == 100)
    }
}
