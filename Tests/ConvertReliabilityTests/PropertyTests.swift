import ConvertBucketing
import ConvertConfigLoader
import ConvertMemory
import ConvertRules
import ConvertSwiftSDK
import ConvertTesting
import ConvertTransport
import ConvertSynchronization
import Foundation
import Testing

/// Properties checked over seeded random inputs (own generator, replayable from the seed).
@Suite struct PropertyTests {
    private func arms(_ random: inout SeededGenerator, total: Double) -> [BucketArm] {
        let count = Int.random(in: 1...5, using: &random)
        let weights = (0..<count).map { _ in Double.random(in: 0.1...1, using: &random) }
        let sum = weights.reduce(0, +)
        return weights.enumerated().map { i, w in
            BucketArm(id: Bool.random(using: &random) ? "\(100 + i * 7)" : "arm-\(i)", trafficAllocation: w / sum * total,
                      isActive: Int.random(in: 0..<8, using: &random) != 0)
        }
    }

    @Test func bucketingIsDeterministic() {
        var random = SeededGenerator(seed: 1)
        for _ in 0..<200 {
            let arms = arms(&random, total: Double.random(in: 1...100, using: &random))
            let layout: BucketLayout = Bool.random(using: &random) ? .packed : .anchored
            let a = BucketTable(arms: arms, layout: layout), b = BucketTable(arms: arms, layout: layout)
            for v in 0..<50 {
                let visitor = "visitor-\(random.next() % 1_000_000)-\(v)"
                let first = a.variation(experienceId: "exp", visitorId: visitor)
                #expect(first == b.variation(experienceId: "exp", visitorId: visitor))
                #expect(first == a.variation(experienceId: "exp", visitorId: visitor))
            }
        }
    }

    @Test func anchoredGrowthOnlyAddsVisitors() {
        var random = SeededGenerator(seed: 2)
        for _ in 0..<100 {
            let total = Double.random(in: 1...60, using: &random)
            let before = arms(&random, total: total)
            let factor = Double.random(in: 1...(100 / total), using: &random)
            let after = before.map { BucketArm(id: $0.id, trafficAllocation: $0.trafficAllocation! * factor, isActive: $0.isActive) }
            let small = BucketTable(arms: before, layout: .anchored), large = BucketTable(arms: after, layout: .anchored)
            for value in stride(from: 0, to: 10_000, by: 13) {
                let old = small.variation(forValue: value)
                let new = large.variation(forValue: value)
                if let old { #expect(new == old, "value \(value) moved from \(old) to \(new ?? "nothing")") }
            }
        }
    }

    @Test func packedGrowthCanMoveVisitorsWhichIsWhyAnchoredExists() {
        let before = ["O", "V1", "V2"].map { BucketArm(id: $0, trafficAllocation: 5) }
        let after = ["O", "V1", "V2"].map { BucketArm(id: $0, trafficAllocation: 100.0 / 12) }
        let small = BucketTable(arms: before, layout: .packed), large = BucketTable(arms: after, layout: .packed)
        let moved = (0..<10_000).filter { v in small.variation(forValue: v).map { $0 != large.variation(forValue: v) } ?? false }
        #expect(!moved.isEmpty)
    }

    @Test(arguments: [BucketLayout.packed, .anchored])
    func distributionFollowsTheAllocation(layout: BucketLayout) {
        let arms = [BucketArm(id: "a", trafficAllocation: 10), BucketArm(id: "b", trafficAllocation: 30),
                    BucketArm(id: "c", trafficAllocation: 60)]
        let table = BucketTable(arms: arms, layout: layout)
        var counts: [String: Int] = [:]
        let n = 100_000
        for i in 0..<n {
            counts[table.variation(experienceId: "100334665", visitorId: "dist-\(i)") ?? "none", default: 0] += 1
        }
        for arm in arms {
            let share = Double(counts[arm.id] ?? 0) / Double(n) * 100
            #expect(abs(share - arm.trafficAllocation!) < 1.0, "\(arm.id): \(share)% for \(arm.trafficAllocation!)%")
        }
        #expect(counts["none"] == nil)
    }

    @Test func negationIsTheComplementWhereverTheOperatorRuns() {
        var random = SeededGenerator(seed: 3)
        let values: [JSONValue] = ["30", 30, 30.5, "0,500", "1,000", "abc", "ABC", "", " ", true, false, .null,
                                   ["a", "b"], ["k": 1], "a|b", "x.*y", "(bad", "ÉCOLE", "école", 0, -1]
        let operators = MatchType.allCases
        var ran = 0
        for _ in 0..<5000 {
            let op = operators[Int.random(in: 0..<operators.count, using: &random)]
            let target = values[Int.random(in: 0..<values.count, using: &random)]
            let visitor = values[Int.random(in: 0..<values.count, using: &random)]
            let data: [String: JSONValue] = ["k": visitor]
            let plain = RuleLeaf(key: "k", matchType: op, value: target).evaluate(data)
            let negated = RuleLeaf(key: "k", matchType: op, value: target, negated: true).evaluate(data)
            switch plain {
            case .matched:
                ran += 1
                #expect(negated == .notMatched, "\(op) \(target) on \(visitor)")
            case .notMatched:
                ran += 1
                #expect(negated == .matched, "\(op) \(target) on \(visitor)")
            default:
                #expect(negated == plain, "a check that cannot run is false either way: \(op) \(target) on \(visitor)")
            }
        }
        #expect(ran > 3000)
    }

    @Test func theConfigCacheKeepsServedBytesVerbatim() async throws {
        var mutator = ConfigMutator(seed: 4)
        let original = [UInt8](try Fixtures.data(.cdnConfigBaseline))
        var checked = 0
        for _ in 0..<60 {
            let served = Data(mutator.mutate(original))
            guard (try? ConfigDecoder.decode(served)) != nil else { continue }
            let cache = MemoryByteStore()
            let transport = StubTransport { _ in HTTPResponse(status: 200, body: served) }
            let source = RemoteConfigSource(settings: .init(sdkKey: "k", refreshInterval: .seconds(3600)),
                                            transport: transport, cache: cache)
            let delivered = Locked<Data?>(nil)
            let task = Task { try await source.run { delivered.set($0.bytes) } }
            while delivered.value == nil { try await Task.sleep(for: .milliseconds(1)) }
            task.cancel()
            #expect(delivered.value == served)
            #expect(try cache.read(source.cacheName) == served, "cached bytes are the served bytes")
            checked += 1
        }
        #expect(checked > 10)
    }
}

