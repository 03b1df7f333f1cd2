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
import Foundation
import Testing

/// One "server" for the claim tests: an SDK tracking into a recorder, visitor data shared
/// through Redis with a claim mode.
struct ClaimingInstance {
    let sdk: ConvertSwiftSDK
    let store: WriteBehindVisitorStore
    let sink = RecordingTrackingSink()
    let logs = RecordingLogSink()

    init(_ client: RedisClient, config: Data, claim: FirstDecisionClaim = .beforeAnswering,
         options: WriteBehindVisitorStore.Options = .init()) async throws {
        var options = options
        options.firstDecisionClaim = claim
        store = WriteBehindVisitorStore(backend: RedisVisitorBackend(client: client), local: MemoryVisitorDataStore(capacity: 100_000),
                                        options: options)
        sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "k", persistence: .memory), ports: ConvertPorts(
            configSource: StubConfigSource(initial: config), visitorStore: store, visitorIdStore: MemoryVisitorIdStore(),
            trackingSink: sink, logSink: logs))
        store.adoptLog(SDKLog(sink: logs, minimum: .debug))
        try await sdk.ready(timeout: .patience)
    }

    /// A request: the visitor loaded, then decided; the variation answered.
    func request(_ visitorId: String) async -> String? {
        let context = await sdk.loadContext(visitorId: visitorId, attributes: ["desktop": true, "browser": "FF"])
        context.setLocationProperties(["location": "pricing"])
        return context.variation(forExperience: "test-experience-ab-fullstack-1")?.id
    }
}

/// Two instances on one Redis, each visitor's first request on A and its second on B right
/// after, B's config splitting traffic otherwise.
private struct TwoInstances {
    let a: ClaimingInstance, b: ClaimingInstance
    let clientA: RedisClient, clientB: RedisClient

    init(_ server: RedisServer, claim: FirstDecisionClaim) async throws {
        clientA = RedisClient(configuration: server.configuration(keyPrefix: "two:"))
        clientB = RedisClient(configuration: server.configuration(keyPrefix: "two:"))
        a = try await ClaimingInstance(clientA, config: try Fixtures.baselineReallocated([50, 50]), claim: claim)
        b = try await ClaimingInstance(clientB, config: try Fixtures.baselineReallocated([100, 0]), claim: claim)
    }

    /// Visitors whose bucketing event was sent more than once, visitors answered two variations,
    /// and visitors whose bucketing event was never sent, over `count` visitors.
    func run(_ count: Int) async throws -> (twice: Int, split: Int, never: Int) {
        var split = 0
        for n in 0..<count {
            let first = await a.request("visitor-\(n)")
            let second = await b.request("visitor-\(n)")
            if first != second { split += 1 }
        }
        _ = await a.store.flush()
        _ = await b.store.flush()
        // Claims made after answering send their events from a task of their own.
        try await Task.sleep(for: .milliseconds(300))
        let bucketing = (a.sink.events + b.sink.events).filter { $0.eventType == "bucketing" }
        let perVisitor = Dictionary(grouping: bucketing, by: \.visitorId)
        return (perVisitor.values.filter { $0.count > 1 }.count, split, count - perVisitor.count)
    }
}

@Suite(.enabled(if: RedisServer.isAvailable, "redis-server is not installed (looked in PATH, /usr/bin, /usr/sbin)"),
       .timeLimit(.minutes(10)))
struct RedisClaimTests {
    @Test func beforeAnsweringTwoInstancesGiveOneAnswerAndOneBucketingEventPerVisitor() async throws {
        let server = try await RedisServer.started()
        let two = try await TwoInstances(server, claim: .beforeAnswering)
        let (twice, split, never) = try await two.run(1_000)
        #expect(twice == 0, "\(twice) visitors bucketed twice")
        #expect(split == 0, "\(split) visitors shown two variations")
        #expect(never == 0, "\(never) visitors never bucketed")
        #expect(two.a.store.counters.claims == 1_000, "A claimed every first decision")
        #expect(two.b.store.counters.claims == 0, "B found every decision stored: \(two.b.store.counters)")
        #expect(two.a.store.counters.claimFailures + two.b.store.counters.claimFailures == 0)
    }

    @Test func afterAnsweringTwoInstancesSendOneBucketingEventPerVisitor() async throws {
        let server = try await RedisServer.started()
        let two = try await TwoInstances(server, claim: .afterAnswering)
        let (twice, _, never) = try await two.run(1_000)
        #expect(two.a.store.counters.claimFailures + two.b.store.counters.claimFailures == 0)
        // The first claim sends: a write behind of the same decision must not get there first.
        #expect(never == 0, "\(never) visitors never bucketed; A: \(two.a.store.counters); B: \(two.b.store.counters)")
        // Half of B's claims find the variation B decided itself stored by A: B must not send then.
        #expect(twice == 0, "\(twice) visitors bucketed twice; A: \(two.a.store.counters); B: \(two.b.store.counters)")
    }

    @Test func twoInstancesDecidingOneNewVisitorAtOnceAgreeAndSendOneEvent() async throws {
        let server = try await RedisServer.started()
        let config = try Fixtures.data(.cdnConfigBaseline)
        let clientA = RedisClient(configuration: server.configuration(keyPrefix: "race:"))
        let clientB = RedisClient(configuration: server.configuration(keyPrefix: "race:"))
        let a = try await ClaimingInstance(clientA, config: config), b = try await ClaimingInstance(clientB, config: config)
        var split = 0
        for n in 0..<300 {
            async let first = a.request("racer-\(n)")
            async let second = b.request("racer-\(n)")
            let (x, y) = await (first, second)
            if x != y { split += 1 }
        }
        #expect(split == 0, "\(split) visitors shown two variations")
        let bucketing = (a.sink.events + b.sink.events).filter { $0.eventType == "bucketing" }
        let twice = Dictionary(grouping: bucketing, by: \.visitorId).values.filter { $0.count > 1 }.count
        // Both decide the same variation (one config); only the claim that stored it is first.
        #expect(twice == 0, "\(twice) visitors bucketed twice")
    }

    @Test func withoutClaimsTheSameRunSendsDuplicatesAndSplitsVisitors() async throws {
        // The control: the run above does catch what claims prevent.
        let server = try await RedisServer.started()
        let two = try await TwoInstances(server, claim: .never)
        let (twice, split, _) = try await two.run(300)
        #expect(twice > 0, "without claims B decides before A's write lands")
        #expect(split > 0)
    }

    @Test func aReturningVisitorCostsOneRoundTripAndANewOneTwo() async throws {
        let server = try await RedisServer.started()
        let client = RedisClient(configuration: server.configuration(keyPrefix: "trips:"))
        // Writes behind only when flushed, so each step's commands are its own.
        let instance = try await ClaimingInstance(client, config: try Fixtures.data(.cdnConfigBaseline),
                                                  options: .init(writeBehind: .seconds(600)))
        _ = await instance.request("warm-up")
        _ = await instance.store.flush()
        func commands(_ body: () async -> Void) async throws -> [String: Int] {
            _ = try server.command(["CONFIG", "RESETSTAT"])
            await body()
            let stats = try server.command(["INFO", "commandstats"]).stringValue ?? ""
            var calls: [String: Int] = [:]
            for line in stats.split(whereSeparator: \.isNewline) where line.hasPrefix("cmdstat_") {
                let name = String(line.dropFirst("cmdstat_".count).prefix { $0 != ":" })
                let count = line.drop { $0 != "=" }.dropFirst().prefix { $0.isNumber }
                // The statistics' own commands aside.
                if !name.hasPrefix("config"), !name.hasPrefix("info") { calls[name] = Int(count) }
            }
            return calls
        }
        let new = try await commands { _ = await instance.request("new-visitor") }
        // The claim is one pipeline: HSETNX, HGET and the expiry renewed when a TTL is set.
        var claim = ["hgetall": 1, "hsetnx": 1, "hget": 1]
        if client.configuration.ttl != nil { claim["pexpire"] = 1 }
        #expect(new == claim, "a new visitor: the load and the claim: \(new)")
        let writes = try await commands { _ = await instance.store.flush() }
        #expect(writes["hset"] == 1 && writes["hsetnx"] == nil && writes["pexpire"] == nil,
                "its write behind is one HSET (the claim stored the decision and renewed the expiry): \(writes)")
        let returning = try await commands { _ = await instance.request("new-visitor") }
        #expect(returning == ["hgetall": 1], "a returning visitor: the load alone: \(returning)")
    }

    @Test func aClaimIsWhereALoadReadsDecisionsAndRenewsTheTimeToLive() async throws {
        let server = try await RedisServer.started()
        var configuration = server.configuration(keyPrefix: "claim:")
        configuration.ttl = .seconds(600)
        let client = RedisClient(configuration: configuration)
        let backend = RedisVisitorBackend(client: client)
        let key = VisitorKey(namespace: "1-2", visitorId: "v")
        #expect(try backend.claimVariation(key, experienceId: "e1", variationId: "a") == VariationClaim(variationId: "a", isFirst: true))
        let redisKey = "claim:" + RedisVisitorBackend.redisKey(key)
        #expect(try server.command(["HGET", .string(redisKey), "d:e1"]).stringValue == "a", "the field a save writes")
        let ttl = try server.command(["PTTL", .string(redisKey)]).intValue ?? -1
        #expect((1...600_000).contains(ttl), "the claim set the time to live: \(ttl)")
        #expect(try await backend.load(key)?.bucketing == ["e1": "a"])
        #expect(try backend.claimVariation(key, experienceId: "e1", variationId: "b") == VariationClaim(variationId: "a", isFirst: false))
        #expect(try await backend.claimVariationLater(key, experienceId: "e2", variationId: "c") == VariationClaim(variationId: "c", isFirst: true))
    }

    @Test func aClaimOnARecordHoldingSomethingElseIsThatRecordsErrorNotAnOutage() async throws {
        let server = try await RedisServer.started()
        let client = RedisClient(configuration: server.configuration(keyPrefix: "foreign:"))
        let backend = RedisVisitorBackend(client: client)
        let key = VisitorKey(namespace: "1-2", visitorId: "string")
        _ = try server.command(["SET", .string("foreign:" + RedisVisitorBackend.redisKey(key)), "text"])
        #expect(throws: RedisVisitorBackend.InvalidRecord.self) {
            try backend.claimVariation(key, experienceId: "e", variationId: "v")
        }
        let store = WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore())
        #expect(store.claimFirstDecision(key, experienceId: "e", variationId: "v")?.variationId == nil)
        #expect(store.counters.outages == 0, "one bad record is not an outage")
        let fine = VisitorKey(namespace: "1-2", visitorId: "fine")
        #expect(store.claimFirstDecision(fine, experienceId: "e", variationId: "v")?.variationId == "v", "other visitors are claimed at once")
        // The writes behind leave the bad record out and write the others.
        let kept = try await backend.merge([VisitorDataChanges(key: key, decisions: ["e": "v"]),
                                            VisitorDataChanges(key: fine, goals: ["g"])])
        #expect(kept == [[:], [:]])
        #expect(try await backend.load(fine)?.goals == ["g"])
    }
}
