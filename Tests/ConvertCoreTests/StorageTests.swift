import ConvertCore
import ConvertMemory
import ConvertStorage
import ConvertSupport
import ConvertTesting
import Foundation
import Testing

enum MemoryVisitorDataStoreFactory {
    static func make(capacity: Int = 100) -> MemoryVisitorDataStore { MemoryVisitorDataStore(capacity: capacity) }
}

enum MemoryVisitorIdStoreFactory {
    static func make() -> MemoryVisitorIdStore { MemoryVisitorIdStore() }
}

@Suite struct LRUCacheTests {
    @Test func evictsTheLeastRecentlyUsed() {
        var cache = LRUCache<String, Int>(capacity: 3)
        cache.set(1, for: "a")
        cache.set(2, for: "b")
        cache.set(3, for: "c")
        #expect(cache.value(for: "a") == 1)
        let evicted = cache.set(4, for: "d")
        #expect(evicted?.key == "b")
        #expect(cache.keysByRecency == ["d", "a", "c"])
        #expect(cache.peek("b") == nil)
        cache.set(30, for: "c")
        #expect(cache.keysByRecency == ["c", "d", "a"])
        #expect(cache.count == 3)
    }

    @Test func holdsAtMostItsCapacityUnderChurn() {
        var cache = LRUCache<Int, Int>(capacity: 1000)
        for i in 0..<100_000 { cache.set(i, for: i) }
        #expect(cache.count == 1000)
        #expect(cache.peek(99_999) == 99_999)
        #expect(cache.peek(98_999) == nil)
        #expect(cache.keysByRecency.first == 99_999)
    }

    @Test func capacityIsAtLeastOne() {
        var cache = LRUCache<String, Int>(capacity: 0)
        cache.set(1, for: "a")
        cache.set(2, for: "b")
        #expect(cache.count == 1)
        #expect(cache.peek("b") == 2)
    }
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
