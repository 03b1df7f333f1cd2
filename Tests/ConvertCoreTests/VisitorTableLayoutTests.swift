import ConvertMemory
import ConvertStorage
import ConvertTesting
import ConvertVisitorTable
import Testing

@Suite struct VisitorTableLayoutTests {
    private func record(_ n: Int) -> VisitorData { VisitorData(bucketing: ["e": "v\(n)"]) }

    /// Keys with the same hash: only their ids (and namespaces) tell them apart.
    private func colliding(_ id: String, _ namespace: String = "1-2") -> VisitorKey {
        VisitorKey(namespace: namespace, namespaceHash: 1, visitorId: id, visitorHash: 2)
    }

    @Test func keysWithTheSameHashButOtherIdsNeverShareARecord() {
        var table = VisitorTable()
        let ids = ["a", "b", "ab", "", "a\u{0}", String(repeating: "y", count: 300)]
        for (i, id) in ids.enumerated() { table.set(record(i), for: colliding(id)) }
        for (i, id) in ids.enumerated() { #expect(table.peek(colliding(id)) == record(i), "\(id)") }
        #expect(table.peek(colliding("c")) == nil)
        #expect(table.peek(colliding("a", "3-4")) == nil)
        #expect(table.peek(colliding(String(repeating: "y", count: 299))) == nil)
        table.set(record(50), for: colliding("a", "3-4"))
        #expect(table.peek(colliding("a")) == record(0))
        #expect(table.peek(colliding("a", "3-4")) == record(50))
        #expect(table.removeValue(for: colliding("b")) == record(1))
        for (i, id) in ids.enumerated() where id != "b" { #expect(table.peek(colliding(id)) == record(i), "\(id)") }
        #expect(table.count == ids.count)
    }

    @Test func idsOfEveryLengthRoundTrip() {
        var table = VisitorTable()
        let lengths = [0, 1, 126, 127, 128, 129, 255, 16_383, 16_384, 70_000]
        for length in lengths { table.set(record(length), for: VisitorKey(namespace: "1-2", visitorId: String(repeating: "z", count: length))) }
        var seen: [Int: VisitorData] = [:]
        table.forEach { key, data in seen[key.visitorId.utf8.count] = data }
        #expect(seen.count == lengths.count)
        for length in lengths { #expect(seen[length] == record(length)) }
    }

    @Test func aTableFilledEmptiedAndRefilledAgreesWithADictionary() {
        var table = VisitorTable()
        var random = SeededGenerator(seed: 11)
        for round in 0..<3 {
            var model: [VisitorKey: VisitorData] = [:]
            let keys = (0..<3_000).map { VisitorKey(namespace: $0 % 2 == 0 ? "1-2" : "5-6", visitorId: "r\(round)-\($0)") }
            for (i, k) in keys.enumerated() {
                table.set(record(i), for: k)
                model[k] = record(i)
            }
            #expect(table.count == keys.count)
            // Remove in a shuffled order so deletion shifts entries of every probe distance.
            for k in keys.shuffled(using: &random) {
                #expect(table.removeValue(for: k) == model.removeValue(forKey: k))
                if random.next() % 64 == 0 { for (k2, d) in model { #expect(table.peek(k2) == d) } }
            }
            #expect(table.count == 0)
            var any = false
            table.forEach { _, _ in any = true }
            #expect(!any)
            for k in keys { #expect(table.peek(k) == nil) }
        }
    }

    @Test func idsSurviveArenaCompaction() {
        // Removing most entries rewrites the id arena; the survivors must still be found by id.
        var table = VisitorTable()
        let keys = (0..<5_000).map { VisitorKey(namespace: "1-2", visitorId: "compact-\($0)-" + String(repeating: "p", count: $0 % 200)) }
        for (i, k) in keys.enumerated() { table.set(record(i), for: k) }
        for (i, k) in keys.enumerated() where i % 10 != 0 { table.removeValue(for: k) }
        for (i, k) in keys.enumerated() { #expect(table.peek(k) == (i % 10 == 0 ? record(i) : nil)) }
        var seen = 0
        table.forEach { key, data in
            seen += 1
            #expect(keys.firstIndex(of: key).map(record) == data)
        }
        #expect(seen == 500)
        for (i, k) in keys.enumerated() where i % 10 != 0 { table.set(record(i + 1), for: k) }
        for (i, k) in keys.enumerated() { #expect(table.peek(k) == (i % 10 == 0 ? record(i) : record(i + 1))) }
    }

    @Test func boundedTableEvictsInInsertionOrderAcrossGrowth() {
        // The hand passes entries in the order they were stored, whatever their hashes, and
        // growing the table does not change that order.
        var table = VisitorTable(capacity: 1_000)
        let keys = (0..<1_000).map { VisitorKey(namespace: "1-2", visitorId: "order-\($0)") }
        for (i, k) in keys.enumerated() { table.set(record(i), for: k) }
        for i in stride(from: 0, to: 1_000, by: 2) { #expect(table.value(for: keys[i]) != nil) }
        for i in 0..<250 { table.set(record(i), for: VisitorKey(namespace: "1-2", visitorId: "late-\(i)")) }
        // The first 250 unread entries (the odd ones up to 499) went, in order.
        for i in 0..<1_000 { #expect((table.peek(keys[i]) == nil) == (i % 2 == 1 && i < 500), "\(i)") }
        #expect(table.count == 1_000)
    }

    @Test func shardedStoreKeepsVisitorsApartByIdAndNamespace() {
        let store = MemoryVisitorDataStore(capacity: 1_000_000)
        for i in 0..<10_000 {
            store.update(VisitorKey(namespace: "1-2", visitorId: "v\(i)")) { $0 = record(i) }
            store.update(VisitorKey(namespace: "7-8", visitorId: "v\(i)")) { $0 = record(i + 1) }
        }
        for i in 0..<20 { store.update(colliding("c\(i)")) { $0 = record(i + 2) } }
        #expect(store.count == 20_020)
        for i in stride(from: 0, to: 10_000, by: 97) {
            #expect(store.data(for: VisitorKey(namespace: "1-2", visitorId: "v\(i)")) == record(i))
            #expect(store.data(for: VisitorKey(namespace: "7-8", visitorId: "v\(i)")) == record(i + 1))
        }
        for i in 0..<20 { #expect(store.data(for: colliding("c\(i)")) == record(i + 2)) }
        #expect(store.data(for: colliding("c20")) == nil)
    }
}
