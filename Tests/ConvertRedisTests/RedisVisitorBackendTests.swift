import ConvertCore
import ConvertEnvironment
import ConvertEvents
import ConvertJSON
import ConvertMemory
import ConvertRedis
import ConvertSharedStore
import ConvertStorage
import ConvertTesting
import ConvertTracking
import ConvertVisitor
import Foundation
import Testing

/// One "server": an SDK whose visitor data is shared through Redis.
private struct Instance {
    let sdk: ConvertSwiftSDK
    let store: WriteBehindVisitorStore
    let sink: RecordingTrackingSink

    init(_ client: RedisClient, config: Data) async throws {
        store = WriteBehindVisitorStore(backend: RedisVisitorBackend(client: client), local: MemoryVisitorDataStore(capacity: 100_000))
        sink = RecordingTrackingSink()
        sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "k", persistence: .memory), ports: ConvertPorts(
            configSource: StubConfigSource(initial: config), visitorStore: store, visitorIdStore: MemoryVisitorIdStore(),
            trackingSink: sink))
        try await sdk.ready(timeout: .patience)
    }
}

@Suite(.enabled(if: RedisServer.isAvailable, "redis-server is not installed (looked in PATH, /usr/bin, /usr/sbin)"))
struct RedisVisitorBackendTests {
    @Test func theRedisBackendKeepsTheBackendContract() async throws {
        let server = try RedisServer()
        let client = RedisClient(configuration: server.configuration(keyPrefix: "contract:"))
        try await VisitorDataBackendContract.verify(RedisVisitorBackend(client: client))
    }

    @Test func twoInstancesOnOneRedisSendOneConversionPerVisitor() async throws {
        let server = try RedisServer()
        var configuration = server.configuration(keyPrefix: "dedup:")
        configuration.poolSize = 8
        let client = RedisClient(configuration: configuration)
        let config = try Fixtures.data(.cdnConfigBaseline)
        let a = try await Instance(client, config: config), b = try await Instance(client, config: config)
        let visitors = (0..<1_000).map { "visitor-\($0)" }
        let results = await withTaskGroup(of: ConversionResult.self) { group in
            for track in 0..<10_000 {
                let instance = track % 2 == 0 ? a : b
                let visitor = visitors[(track * 7919) % visitors.count]
                group.addTask { await instance.sdk.createContext(visitorId: visitor).trackConversion("button-primary-click") }
            }
            return await group.reduce(into: [ConversionResult]()) { $0.append($1) }
        }
        let conversions = (a.sink.events + b.sink.events).filter { $0.eventType == "conversion" }
        #expect(results.count == 10_000)
        #expect(conversions.count == visitors.count, "one conversion per visitor over both instances, got \(conversions.count)")
        #expect(Set(conversions.map(\.visitorId)).count == visitors.count, "0 duplicates")
        #expect(a.store.counters.goalRecordFailures + b.store.counters.goalRecordFailures == 0)
    }

    @Test func everyStickyDecisionIsHonouredAcrossInstancesAfterAnAllocationChange() async throws {
        let server = try RedisServer()
        let client = RedisClient(configuration: server.configuration(keyPrefix: "sticky:"))
        let before = try await Instance(client, config: try Fixtures.baselineReallocated([50, 50]))
        let after = try await Instance(client, config: try Fixtures.baselineReallocated([0, 100]))
        var first: [String: String] = [:]
        for n in 0..<400 {
            let context = await before.sdk.loadContext(visitorId: "v\(n)", attributes: ["desktop": true, "browser": "FF"])
            context.setLocationProperties(["location": "pricing"])
            first["v\(n)"] = try #require(context.variation(forExperience: "test-experience-ab-fullstack-1")?.id)
        }
        _ = await before.store.flush()
        #expect(before.store.counters.pending == 0, "the write-behind wrote every visitor")
        #expect(before.store.counters.saves >= 400)
        #expect(Set(first.values).count == 2)
        var honoured = 0
        for (visitor, variation) in first {
            let context = await after.sdk.loadContext(visitorId: visitor, attributes: ["desktop": true, "browser": "FF"])
            context.setLocationProperties(["location": "pricing"])
            if context.variation(forExperience: "test-experience-ab-fullstack-1")?.id == variation { honoured += 1 }
        }
        #expect(honoured == first.count, "\(first.count - honoured) sticky decisions lost across instances")
    }

    @Test func aServerThatGoesAwayNeverStopsDecisionsAndWritesAreRetried() async throws {
        let server = try RedisServer()
        let client = RedisClient(configuration: server.configuration(keyPrefix: "down:"))
        let instance = try await Instance(client, config: try Fixtures.data(.cdnConfigBaseline))
        server.kill()
        let started = ContinuousClock.now
        let context = await instance.sdk.loadContext(visitorId: "while-down", attributes: ["desktop": true, "browser": "FF"])
        context.setLocationProperties(["location": "pricing"])
        guard case .failed = context.visitorDataLoad else {
            Issue.record("the load must fail while the server is down: \(String(describing: context.visitorDataLoad))")
            return
        }
        let variation = try #require(context.variation(forExperience: "test-experience-ab-fullstack-1"), "decided as new")
        #expect(await context.saveVisitorData() == false)
        #expect(underThreadSanitizer || ContinuousClock.now - started < .seconds(10), "a dead server fails fast")
        try server.start()
        let deadline = ContinuousClock.now + .patience
        while instance.store.counters.pending > 0 && ContinuousClock.now < deadline {
            _ = await instance.store.flush()
            try await Task.sleep(for: .milliseconds(50))
        }
        let stored = try await RedisVisitorBackend(client: client).load(VisitorKey(namespace: "10035569-10034190",
                                                                                  visitorId: "while-down"))
        #expect(stored?.bucketing.values.contains(variation.id) == true, "the write reached Redis once it was back")
    }

    @Test func aKeyHoldingSomethingElseIsAnErrorNotACrash() async throws {
        let server = try RedisServer()
        let client = RedisClient(configuration: server.configuration(keyPrefix: "foreign:"))
        let backend = RedisVisitorBackend(client: client)
        let key = VisitorKey(namespace: "1-2", visitorId: "v")
        try await client.send(["SET", .key(RedisVisitorBackend.redisKey(key)), "not a hash"])
        // A record of another kind is that record's error (the store does not take it for an outage).
        await #expect(throws: RedisVisitorBackend.InvalidRecord.self) { try await backend.load(key) }
        await #expect(throws: RedisVisitorBackend.InvalidRecord.self) { try await backend.save(key, VisitorData(bucketing: ["e": "v"])) }
        await #expect(throws: RedisVisitorBackend.InvalidRecord.self) { try await backend.recordGoalOnce(key, goalId: "g") }
        let other = VisitorKey(namespace: "1-2", visitorId: "w")
        _ = try await client.hset(RedisVisitorBackend.redisKey(other), ["unrelated": "x"])
        await #expect(throws: RedisVisitorBackend.InvalidRecord.self) { try await backend.load(other) }
        let store = WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore())
        #expect(await store.load(key) != .loaded, "the store reports the failure instead")
        #expect(store.counters.outages == 0, "one record is not the backend")
    }
}

@Suite(.enabled(if: RedisServer.isAvailable, "redis-server is not installed (looked in PATH, /usr/bin, /usr/sbin)"))
struct RedisNonFiniteSegmentTests {
    @Test func nonFiniteSegmentValuesReadBackAsTheyWereSaved() async throws {
        let server = try RedisServer()
        let client = RedisClient(configuration: server.configuration(keyPrefix: "nonfinite:"))
        let key = VisitorKey(accountId: "1", projectId: "2", visitorId: "v")
        let values: [String: JSONValue] = ["country": .number(.nan), "browser": .number(-.infinity),
                                           "devices": .array(["tablet", .number(.infinity)])]
        // Both ways of writing: a whole record, and a change merged in.
        _ = try await RedisVisitorBackend(client: client).save(key, VisitorData(bucketing: [:], segmentValues: values))
        let other = VisitorKey(accountId: "1", projectId: "2", visitorId: "w")
        _ = try await RedisVisitorBackend(client: client).merge([VisitorDataChanges(key: other, all: VisitorData(bucketing: [:], segmentValues: values))])
        for key in [key, other] {
            let read = try #require(try await RedisVisitorBackend(client: client).load(key)).segmentValues
            #expect(read["country"]?.numberValue?.isNaN == true)
            #expect(read["browser"] == .number(-.infinity))
            #expect(read["devices"] == .array(["tablet", .number(.infinity)]))
            #expect(read.count == 3, "the list of non-finite numbers is no segment: \(read)")
        }
    }
}
