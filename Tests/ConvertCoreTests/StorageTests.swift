import ConvertCore
import ConvertEnvironment
import ConvertMemory
import ConvertModel
import ConvertStorage
import ConvertSynchronization
import ConvertTesting
import ConvertVisitor
import ConvertVisitorTable
import Foundation
import Testing

enum MemoryVisitorDataStoreFactory {
    static func make(capacity: Int = 100) -> MemoryVisitorDataStore { MemoryVisitorDataStore(capacity: capacity) }
}

enum MemoryVisitorIdStoreFactory {
    static func make() -> MemoryVisitorIdStore { MemoryVisitorIdStore() }
}

@Suite struct VisitorStoreTests {
    @Test func storeIsBoundedAndForgetsOldVisitors() async throws {
        let store = MemoryVisitorDataStore(capacity: 10)
        let harness = TestSDK(data: try Fixtures.data(.cdnConfigBaseline), store: store)
        try await harness.sdk.ready()
        for i in 0..<50 {
            _ = await qualifyingContext(harness, "v\(i)").runExperience("test-experience-ab-fullstack-1")
        }
        #expect(store.count == 10)
        #expect(store.data(for: "10035569-10034190-v49") != nil)
        #expect(store.data(for: "10035569-10034190-v0") == nil)
    }

    @Test func emptyUpdatesDoNotFillTheStore() {
        let store = MemoryVisitorDataStore(capacity: 10)
        store.update("k") { _ in }
        #expect(store.count == 0)
        store.update("k") { $0.goals.insert("g") }
        #expect(store.data(for: "k")?.goals == ["g"])
    }

    @Test func storeKeyFormat() {
        #expect(VisitorData.storeKey(accountId: "1", projectId: "2", visitorId: "v") == "1-2-v")
    }

    @Test func autoVisitorIdIsCreatedOnceAndPersisted() async throws {
        let ids = MemoryVisitorIdStore()
        let counter = Counter()
        let first = TestSDK(data: try Fixtures.data(.cdnConfigBaseline), idStore: ids,
                            identifiers: IdentifierSource { counter.increment(); return "auto-\(counter.value)" })
        let a = first.sdk.createContext().visitorId
        let b = first.sdk.createContext().visitorId
        #expect(a == "auto-1")
        #expect(b == a)
        #expect(ids.loadVisitorId() == "auto-1")
        let second = TestSDK(data: try Fixtures.data(.cdnConfigBaseline), idStore: ids,
                             identifiers: IdentifierSource { "never-used" })
        #expect(second.sdk.createContext().visitorId == "auto-1")
        #expect(second.sdk.createContext(visitorId: "explicit").visitorId == "explicit")
        #expect(IdentifierSource.uuid.next() != IdentifierSource.uuid.next())
    }
}

@Suite struct VisitorTableTests {
    private func key(_ id: String, _ namespace: String = "1-2") -> VisitorKey { VisitorKey(namespace: namespace, visitorId: id) }
    private func record(_ n: Int) -> VisitorData { VisitorData(bucketing: ["e": "v\(n)"]) }

    @Test func agreesWithADictionaryUnderRandomOperations() {
        var table = VisitorTable()
        var model: [VisitorKey: VisitorData] = [:]
        var random = SeededGenerator(seed: 7)
        let keys = (0..<400).map { key("visitor-\($0)", $0 % 3 == 0 ? "1-2" : "3-4") }
        for step in 0..<20_000 {
            let k = keys[Int(random.next() % UInt64(keys.count))]
            switch random.next() % 4 {
            case 0, 1:
                table.set(record(step), for: k)
                model[k] = record(step)
            case 2:
                #expect(table.removeValue(for: k) == model.removeValue(forKey: k))
            default:
                #expect(table.peek(k) == model[k])
            }
        }
        #expect(table.count == model.count)
        var seen: [VisitorKey: VisitorData] = [:]
        table.forEach { seen[$0] = $1 }
        #expect(seen == model)
    }

    @Test func evictsAnEntryNotUsedSinceTheHandPassedAndKeepsTheBound() {
        var table = VisitorTable(capacity: 3)
        for id in ["a", "b", "c"] { table.set(record(1), for: key(id)) }
        #expect(table.value(for: key("a")) != nil)
        table.set(record(2), for: key("d"))
        // "a" was read, so the hand spares it and takes "b".
        #expect(table.peek(key("b")) == nil)
        for id in ["a", "c", "d"] { #expect(table.peek(key(id)) != nil, "\(id)") }
        // A key read on every round survives any amount of churn.
        for i in 0..<10_000 {
            table.set(record(i), for: key("churn-\(i)"))
            #expect(table.value(for: key("a")) != nil)
        }
        #expect(table.count == 3)
        #expect(table.peek(key("churn-9999")) == record(9999))
        var seen: [String] = []
        table.forEach { key, _ in seen.append(key.visitorId) }
        #expect(seen.count == 3 && seen.contains("a"))
    }

    @Test func boundedTableMatchesADictionaryOfItsSurvivors() {
        var table = VisitorTable(capacity: 50)
        var random = SystemRandomNumberGenerator()
        var written: [VisitorKey: VisitorData] = [:]
        for step in 0..<5_000 {
            let k = key("v\(Int.random(in: 0..<200, using: &random))")
            if Bool.random(using: &random) {
                table.set(record(step), for: k)
                written[k] = record(step)
            } else if let found = table.value(for: k) {
                #expect(found == written[k])
            }
            #expect(table.count <= 50)
        }
        table.forEach { k, data in #expect(written[k] == data) }
    }

    @Test func evictionFindsKeysBuiltWithHashesOfTheirOwn() {
        // Keys whose hash is not their text's (the public hash initializer allows it): eviction
        // rebuilds a key from its text, so it must still find and remove the right entry.
        var table = VisitorTable(capacity: 8)
        let odd = (0..<40).map { VisitorKey(namespace: "1-2", namespaceHash: UInt64($0), visitorId: "odd-\($0)",
                                            visitorHash: 0x9E37_79B9_7F4A_7C15 &* UInt64($0 + 1)) }
        for (i, k) in odd.enumerated() {
            table.set(record(i), for: k)
            #expect(table.count <= 8)
            #expect(table.peek(k) == record(i))
        }
        var survivors = 0
        table.forEach { k, data in
            survivors += 1
            #expect(data == record(Int(k.visitorId.dropFirst(4))!))
        }
        #expect(survivors == 8)
        #expect(odd.suffix(1).allSatisfy { table.peek($0) != nil })
    }

    @Test func idsAreComparedByBytesAndNamespace() {
        var table = VisitorTable()
        let odd = ["", "é", "e\u{301}", "🚀", String(repeating: "x", count: 2000)]
        for (i, id) in odd.enumerated() { table.set(record(i), for: key(id)) }
        table.set(record(99), for: key("é", "9-9"))
        for (i, id) in odd.enumerated() { #expect(table.peek(key(id)) == record(i), "\(id)") }
        #expect(table.peek(key("é", "9-9")) == record(99))
        #expect(table.count == odd.count + 1)
    }

    @Test func emptiedEntriesAreRemoved() {
        var table = VisitorTable()
        table.set(record(1), for: key("a"))
        table.modify(key("a")) { $0.bucketing = [:] }
        #expect(table.count == 0)
        table.modify(key("b")) { _ in }
        #expect(table.count == 0)
    }
}

@Suite struct VisitorDataTests {
    @Test func equalDataIsEqualWhateverTheOrderOfChanges() {
        var a = VisitorData()
        a.bucketing["e1"] = "v1"
        a.locations.insert("l2")
        a.goals = ["g1"]
        a.bucketing["e2"] = "v2"
        a.locations.insert("l1")
        var b = VisitorData()
        b.locations = ["l1", "l2"]
        b.bucketing = ["e2": "v2", "e1": "v1"]
        b.goals.insert("g1")
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(a.variationId(forExperienceId: "e2") == "v2")
        #expect(a.hasConverted(goalId: "g1"))
        #expect(!a.hasConverted(goalId: "never-seen-goal"))
    }

    @Test func removingEverythingLeavesEmptyData() {
        var data = VisitorData(bucketing: ["e": "v"], goals: ["g"], locations: ["l"])
        #expect(!data.isEmpty)
        data.bucketing["e"] = nil
        data.goals = []
        data.locations.remove("l")
        #expect(data.isEmpty)
        #expect(data == VisitorData())
    }

    @Test func codableFormIsUnchanged() throws {
        let data = VisitorData(bucketing: ["100": "200"], goals: ["g"], segments: VisitorSegments(country: "DE"), locations: ["l"])
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(data)) as? [String: Any]
        #expect(json?["bucketing"] as? [String: String] == ["100": "200"])
        #expect(json?["goals"] as? [String] == ["g"])
        #expect(json?["locations"] as? [String] == ["l"])
        #expect(try JSONDecoder().decode(VisitorData.self, from: JSONEncoder().encode(data)) == data)
    }

    @Test func recordsGrowingPastTheInlineWordsAndShrinkingBackKeepTheirMeaning() {
        // Grown one entry at a time and shrunk back, a record moves between its inline words and
        // an array; at every size it must equal (and hash as) the same data built in one go.
        var data = VisitorData()
        var bucketing: [String: String] = [:], goals: Set<String> = [], locations: Set<String> = []
        // Entry `i` added (or removed) both in `data` and in what it is expected to equal.
        func change(_ i: Int, adding: Bool) -> VisitorData {
            func change(_ set: inout Set<String>, _ element: String) {
                if adding { set.insert(element) } else { set.remove(element) }
            }
            switch i % 3 {
            case 0:
                data.bucketing["grow-e\(i)"] = adding ? "grow-v\(i)" : nil
                bucketing["grow-e\(i)"] = adding ? "grow-v\(i)" : nil
            case 1:
                change(&data.goals, "grow-g\(i)")
                change(&goals, "grow-g\(i)")
            default:
                change(&data.locations, "grow-l\(i)")
                change(&locations, "grow-l\(i)")
            }
            return VisitorData(bucketing: bucketing, goals: goals, locations: locations)
        }
        for i in 0..<12 {
            let expected = change(i, adding: true)
            #expect(data == expected)
            #expect(data.hashValue == expected.hashValue)
            #expect(data.bucketing == bucketing && data.goals == goals && data.locations == locations)
        }
        for i in 0..<12 {
            let expected = change(i, adding: false)
            #expect(data == expected)
            #expect(data.hashValue == expected.hashValue)
            #expect(data.variationId(forExperienceId: "grow-e\(i)") == nil)
        }
        #expect(data.isEmpty)
        #expect(data == VisitorData())
    }

    @Test func largeRecordsKeepEveryEntry() {
        let goals = Set((0..<300).map { "many-g\($0)" })
        var data = VisitorData(bucketing: ["many-e": "many-v"], goals: goals)
        #expect(data.goals == goals)
        #expect(goals.allSatisfy { data.hasConverted(goalId: $0) })
        #expect(data.variationId(forExperienceId: "many-e") == "many-v")
        data.goals = []
        #expect(data == VisitorData(bucketing: ["many-e": "many-v"]))
        data.bucketing = [:]
        #expect(data.isEmpty)
    }

    @Test func roomReservedAheadChangesNothingVisible() {
        var reserved = VisitorData(), plain = VisitorData()
        reserved.reserve(extra: 8)
        #expect(reserved == plain)
        for i in 0..<6 {
            reserved.insertLocation(InternedId("room-l\(i)"))
            plain.insertLocation(InternedId("room-l\(i)"))
        }
        reserved.setVariation(InternedId("room-v"), forExperience: InternedId("room-e"))
        plain.setVariation(InternedId("room-v"), forExperience: InternedId("room-e"))
        #expect(reserved == plain)
        #expect(reserved.hashValue == plain.hashValue)
        #expect(reserved.containsLocation(InternedId("room-l5")) && reserved.hasLocations)
    }

    @Test func keysParseAndCompare() {
        let key = VisitorKey(accountId: "10022898", projectId: "10025986", visitorId: "a-b-c")
        #expect(key.storeKey == "10022898-10025986-a-b-c")
        #expect(VisitorKey(storeKey: key.storeKey) == key)
        #expect(VisitorKey(storeKey: "one-dash") == nil)
        #expect(VisitorKey(storeKey: "plain") == nil)
        let literal: VisitorKey = "10022898-10025986-a-b-c"
        #expect(literal == key)
        #expect(VisitorKey(namespace: "1-2", visitorId: "x") != VisitorKey(namespace: "1-3", visitorId: "x"))
    }
}

@Suite struct StripedValueTests {
    @Test func stripesSerializeTheirCriticalSections() {
        final class Box: @unchecked Sendable { var value = 0 }
        let box = Box()
        let stripes = StripedValue(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<10_000 { stripes.read(42) { _ in box.value += 1 } }
        }
        #expect(box.value == 80_000)
    }

    @Test func anUpdateReachesEveryStripe() {
        let stripes = StripedValue("old", stripes: 8)
        stripes.update { $0 = "new" }
        #expect((0..<64).allSatisfy { n in stripes.read(UInt64(n) << 7) { $0 == "new" } })
    }
}

@Suite struct ThreadNumberTests {
    @Test func runningThreadsHaveNumbersOfTheirOwnThatStay() {
        let seen = Locked([UInt: Int]())
        let started = DispatchGroup(), release = DispatchSemaphore(value: 0), done = DispatchGroup()
        for _ in 0..<4 {
            started.enter()
            done.enter()
            let thread = Thread {
                let first = currentThreadNumber()
                started.leave()
                // All four are alive at once while they read their numbers again.
                release.wait()
                let again = currentThreadNumber()
                seen.withValue { $0[first, default: 0] += first == again ? 1 : 100 }
                done.leave()
            }
            thread.start()
        }
        started.wait()
        for _ in 0..<4 { release.signal() }
        done.wait()
        let numbers = seen.withValue { $0 }
        #expect(numbers.count == 4, "four threads running together, four numbers: \(numbers)")
        #expect(numbers.values.allSatisfy { $0 == 1 }, "each thread read the same number twice")
        #expect(!numbers.keys.contains(0))
    }
}

@Suite struct GenerationCounterTests {
    @Test func everyAdvanceCounts() {
        let counter = GenerationCounter()
        #expect(counter.value == 0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<1_000 { counter.advance() }
        }
        #expect(counter.value == 8_000)
    }
}

/// Whether this process runs under the thread sanitizer (its runtime exports `__tsan_init`).
#if canImport(Darwin)
private let underThreadSanitizer = dlsym(UnsafeMutableRawPointer(bitPattern: -2), "__tsan_init") != nil
#else
private let underThreadSanitizer = dlsym(nil, "__tsan_init") != nil
#endif

@Suite struct InlineLockedTests {
    // On Linux the lock is the standard library's `Mutex`, whose futex the thread sanitizer
    // cannot see: it would report the serialized increments as races.
    @Test(.enabled(if: !underThreadSanitizer, "the thread sanitizer cannot see the standard Mutex's futex"))
    func itsCriticalSectionsAreSerialized() {
        let counter = InlineLocked.holding(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<10_000 { counter.withValue { $0 += 1 } }
        }
        #expect(counter.withValue { $0 } == 80_000)
    }

    @Test func itReleasesItsValueWithItself() {
        final class Watched: Sendable {
            let gone: @Sendable () -> Void
            init(_ gone: @escaping @Sendable () -> Void) { self.gone = gone }
            deinit { gone() }
        }
        let released = Locked(false)
        do {
            let lock = InlineLocked.holding([Watched { released.withValue { $0 = true } }])
            #expect(lock.withValue { $0.count } == 1)
            #expect(released.withValue { $0 } == false)
        }
        #expect(released.withValue { $0 } == true, "the value went with the lock, moved in rather than copied")
    }
}
