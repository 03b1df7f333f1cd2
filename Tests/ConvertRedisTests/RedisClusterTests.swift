import ConvertCore
import ConvertEnvironment
import ConvertEvents
import ConvertJSON
import ConvertMemory
@testable import ConvertRedis
import ConvertSharedStore
import ConvertStorage
import ConvertSynchronization
import ConvertTesting
import ConvertTracking
import ConvertVisitor
import Foundation
import Testing

extension ClaimingInstance {
    /// An instance whose visitor data goes through `backend` (a cluster's), claims before answering.
    init(backend: any VisitorDataBackend, config: Data) async throws {
        var options = WriteBehindVisitorStore.Options()
        options.firstDecisionClaim = .beforeAnswering
        store = WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore(capacity: 100_000), options: options)
        sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "k", persistence: .memory), ports: ConvertPorts(
            configSource: StubConfigSource(initial: config), visitorStore: store, visitorIdStore: MemoryVisitorIdStore(),
            trackingSink: sink, logSink: logs))
        store.adoptLog(SDKLog(sink: logs, minimum: .debug))
        try await sdk.ready(timeout: .patience)
    }
}

@Suite struct RedisClusterSlotTests {
    @Test func crc16IsXmodem() {
        #expect(RedisClusterClient.crc16(Array("123456789".utf8)) == 0x31C3)
        #expect(RedisClusterClient.slot(of: "123456789") == 0x31C3 % 16_384)
    }

    @Test func aHashTagIsHashedAloneWhenNotEmpty() {
        #expect(RedisClusterClient.slot(of: "p:visitor:{42}:a") == RedisClusterClient.slot(of: "42"))
        #expect(RedisClusterClient.slot(of: "{}x") == Int(RedisClusterClient.crc16(Array("{}x".utf8)) % 16_384), "an empty tag: the whole key")
        #expect(RedisClusterClient.slot(of: "a{}{b}") == Int(RedisClusterClient.crc16(Array("a{}{b}".utf8)) % 16_384), "an empty first tag: the whole key")
        #expect(RedisClusterClient.slot(of: "x{a}{b}") == RedisClusterClient.slot(of: "a"), "the first tag only")
    }

    @Test func redirectionsAreParsed() {
        let moved = RedisClusterClient.Redirect("MOVED 3999 127.0.0.1:6381")
        #expect(moved?.ask == false && moved?.slot == 3999 && moved?.host == "127.0.0.1" && moved?.port == 6381)
        let ask = RedisClusterClient.Redirect("ASK 12 [::1]:7000")
        #expect(ask?.ask == true && ask?.slot == 12 && ask?.host == "::1" && ask?.port == 7000)
        #expect(RedisClusterClient.Redirect("ERR unknown command") == nil)
        #expect(RedisClusterClient.redirect(in: [.integer(1), .error("WRONGTYPE Operation"), .error("MOVED 1 h:2")])?.port == 2)
        #expect(RedisClusterClient.redirect(in: [.integer(1), .error("WRONGTYPE Operation")]) == nil)
    }

    @Test func anEmptyAnnouncedHostIsTheHostAsked() throws {
        let reply: RESPValue = .array([.array([.integer(0), .integer(100), .array([.bulkString(Data()), .integer(7000), .bulkString(Data("id".utf8))])]),
                                       .array([.integer(101), .integer(16_383), .array([.bulkString(Data("10.0.0.2".utf8)), .integer(7001)])])])
        let ranges = try #require(RedisClusterClient.slotRanges(reply, host: "10.0.0.1"))
        #expect(ranges.map(\.host) == ["10.0.0.1", "10.0.0.2"])
        #expect(ranges.map(\.port) == [7000, 7001])
        #expect(ranges.map(\.slots) == [0...100, 101...16_383])
        #expect(RedisClusterClient.slotRanges(.array([.array([.integer(0), .integer(16_384), .array([.bulkString(Data()), .integer(1)])])]), host: "h") == nil,
                "a slot past the last is refused")
    }
}

@Suite(.enabled(if: RedisCluster.isAvailable, "redis-server or redis-cli is not installed (looked in PATH, /usr/bin)"),
       .serialized, .timeLimit(.minutes(10)))
struct RedisClusterTests {
    @Test func slotsAreTheServersForRandomKeysAndHashTags() async throws {
        let cluster = try await RedisCluster.started()
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789:-_{}é")
        var keys: [String] = []
        for n in 0..<200 {
            var key = String((0..<Int.random(in: 1...24, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            switch n % 4 {
            case 0: key = "convert:visitor:{\(n)-7}:" + key
            case 1: key = "{}" + key
            default: break
            }
            keys.append(key)
        }
        var mismatches: [String] = []
        for key in keys {
            let server = try #require(try cluster.servers[0].command(["CLUSTER", "KEYSLOT", .string(key)]).intValue)
            if RedisClusterClient.slot(of: key) != Int(server) { mismatches.append("\(key): \(RedisClusterClient.slot(of: key)) vs \(server)") }
        }
        #expect(mismatches.isEmpty, "\(mismatches)")
        #expect(keys.filter { $0.contains("{") }.count >= 100)
    }

    @Test func theBackendContractHoldsOverACluster() async throws {
        let cluster = try await RedisCluster.started()
        let client = RedisClusterClient(seeds: cluster.seeds(keyPrefix: "contract:"))
        defer { client.close() }
        try await VisitorDataBackendContract.verify(RedisVisitorBackend(cluster: client))
    }

    @Test func visitorsAreSavedAndLoadedOnAllThreeMasters() async throws {
        let cluster = try await RedisCluster.started()
        let client = RedisClusterClient(seeds: cluster.seeds(keyPrefix: "spread:"))
        defer { client.close() }
        #expect(await eventually { client.topologyRefreshes > 0 }, "the topology read at start")
        let backend = RedisVisitorBackend(cluster: client)
        var expected: [VisitorKey: VisitorData] = [:]
        var records: [(VisitorKey, VisitorData)] = []
        for n in 0..<300 {
            var data = VisitorData()
            data.setVariation(InternedId("v\(n % 3)"), forExperience: InternedId("e\(n % 5)"))
            data.insertGoal(InternedId("g\(n)"))
            let key = VisitorKey(namespace: "10-20", visitorId: "visitor-\(n)")
            expected[key] = data
            records.append((key, data))
        }
        // Half one at a time, half in one batch (split per master).
        for (key, data) in records[..<150] { _ = try await backend.save(key, data) }
        let saved = try await backend.saveAll(Array(records[150...]))
        #expect(saved.count == 150)
        for (key, data) in records {
            let loaded = try await backend.load(key)
            #expect(loaded?.bucketing == data.bucketing && loaded?.goals == data.goals, "\(key.visitorId)")
        }
        // Writes behind: a batch over every master.
        let changes = records.map { VisitorDataChanges(key: $0.0, goals: ["late"]) }
        let kept = try await backend.merge(changes)
        #expect(kept.count == 300)
        for (key, _) in records.prefix(30) { #expect(try await backend.load(key)?.goals.contains("late") == true) }
        #expect(client.redirections == 0, "every command went to its slot's master at once")
        #expect(client.masters.count == 3)
        let masters = try cluster.nodes().filter(\.isMaster)
        #expect(masters.count == 3)
        for master in masters {
            let keys = try #require(try cluster.server(port: master.port)?.command(["DBSIZE"]).intValue)
            #expect(keys > 30, "master \(master.port) holds \(keys) of the 300 visitors")
        }
    }

    @Test func twoInstancesOverTwoClusterClientsGiveOneAnswerAndOneBucketingEventPerVisitor() async throws {
        let cluster = try await RedisCluster.started()
        let clientA = RedisClusterClient(seeds: cluster.seeds(keyPrefix: "two:"))
        let clientB = RedisClusterClient(seeds: cluster.seeds(keyPrefix: "two:"))
        defer { clientA.close(); clientB.close() }
        let a = try await ClaimingInstance(backend: RedisVisitorBackend(cluster: clientA), config: try Fixtures.baselineReallocated([50, 50]))
        let b = try await ClaimingInstance(backend: RedisVisitorBackend(cluster: clientB), config: try Fixtures.baselineReallocated([100, 0]))
        var split = 0
        let count = 1_000
        for n in 0..<count {
            let first = await a.request("visitor-\(n)")
            let second = await b.request("visitor-\(n)")
            if first != second { split += 1 }
        }
        _ = await a.store.flush()
        _ = await b.store.flush()
        let bucketing = (a.sink.events + b.sink.events).filter { $0.eventType == "bucketing" }
        let perVisitor = Dictionary(grouping: bucketing, by: \.visitorId)
        let twice = perVisitor.values.filter { $0.count > 1 }.count
        #expect(twice == 0, "\(twice) visitors bucketed twice")
        #expect(split == 0, "\(split) visitors shown two variations")
        #expect(perVisitor.count == count, "\(count - perVisitor.count) visitors never bucketed")
        #expect(a.store.counters.claims == count, "A claimed every first decision: \(a.store.counters)")
        #expect(a.store.counters.claimFailures + b.store.counters.claimFailures == 0)
    }

    @Test func aStaleMapFollowsAskThenMoved() async throws {
        let cluster = try await RedisCluster.started()
        let client = RedisClusterClient(seeds: cluster.seeds(keyPrefix: "moved:"))
        defer { client.close() }
        #expect(await eventually { client.topologyRefreshes > 0 }, "the topology read at start")
        let backend = RedisVisitorBackend(cluster: client)
        let key = VisitorKey(namespace: "1-2", visitorId: "migrating")
        var data = VisitorData()
        data.setVariation(InternedId("v"), forExperience: InternedId("e"))
        _ = try await backend.save(key, data)
        let redisKey = "moved:" + RedisVisitorBackend.redisKey(key)
        let slot = RedisClusterClient.slot(of: redisKey)
        let source = try #require(try cluster.master(of: slot))
        let target = try #require(try cluster.nodes().first { $0.isMaster && $0.id != source.id && !$0.slots.isEmpty })
        let sourceServer = try #require(cluster.server(port: source.port)), targetServer = try #require(cluster.server(port: target.port))
        #expect(client.owner(of: slot).configuration.port == source.port)

        _ = try targetServer.command(["CLUSTER", "SETSLOT", .integer(slot), "IMPORTING", .string(source.id)])
        _ = try sourceServer.command(["CLUSTER", "SETSLOT", .integer(slot), "MIGRATING", .string(target.id)])
        _ = try sourceServer.command(["MIGRATE", "127.0.0.1", .integer(target.port), "", 0, 5_000, "KEYS", .string(redisKey)])
        // The key moved, the slot not yet: the source answers ASK.
        #expect(try await backend.load(key)?.bucketing == ["e": "v"], "loaded through ASKING on the target")
        #expect(client.owner(of: slot).configuration.port == source.port, "ASK leaves the map as it was")
        // One visitor's several commands after an ASK, written behind and claimed: `ASKING`
        // holds for one command, so each needs its own (else the second is answered MOVED).
        let written = try await backend.merge([VisitorDataChanges(key: key, decisions: ["f": "w"], goals: ["g"])])
        #expect(written == [[:]], "the write behind went through ASKING")
        #expect(try backend.claimVariation(key, experienceId: "h", variationId: "x") == VariationClaim(variationId: "x", isFirst: true),
                "the claim went through ASKING")
        #expect(try await backend.claimVariationLater(key, experienceId: "i", variationId: "y") == VariationClaim(variationId: "y", isFirst: true),
                "the claim after answering went through ASKING")

        for server in cluster.servers where server.port == source.port || server.port == target.port {
            _ = try server.command(["CLUSTER", "SETSLOT", .integer(slot), "NODE", .string(target.id)])
        }
        for (field, value) in [("d:f", "w"), ("g:g", "1"), ("d:h", "x"), ("d:i", "y")] {
            #expect(try targetServer.command(["HGET", .string(redisKey), .string(field)]).stringValue == value,
                    "\(field) written on the target, where the key is")
        }
        // The source answers MOVED now.
        let lag = SchedulingLag()
        let started = ContinuousClock.now
        #expect(try await backend.load(key)?.bucketing == ["e": "v", "f": "w", "h": "x", "i": "y"], "loaded after MOVED from the new master")
        let elapsed = ContinuousClock.now - started
        let worstLag = lag.stop()
        #expect(elapsed < client.configuration.commandTimeout + worstLag, "took \(elapsed); the process's tasks woke up to \(worstLag) late")
        #expect(client.owner(of: slot).configuration.port == target.port, "MOVED updated the slot's master")
        #expect(try backend.claimVariation(key, experienceId: "e", variationId: "w") == VariationClaim(variationId: "v", isFirst: false))
    }

    @Test func aMasterKilledUnderLoadCostsNoCallMoreThanItsBoundAndItsReplicaTakesOver() async throws {
        let cluster = try await RedisCluster.started()
        let timeout: Duration = underThreadSanitizer ? .seconds(30) : .milliseconds(250)
        let client = RedisClusterClient(seeds: cluster.seeds(keyPrefix: "failover:", commandTimeout: timeout))
        defer { client.close() }
        #expect(await eventually { client.topologyRefreshes > 0 }, "the topology read at start")
        let backend = RedisVisitorBackend(cluster: client)
        let keys = (0..<300).map { VisitorKey(namespace: "1-2", visitorId: "visitor-\($0)") }
        for key in keys { _ = try await backend.merge([VisitorDataChanges(key: key, goals: ["g"])]) }

        let victim = try #require(try cluster.nodes().first { $0.isMaster && !$0.slots.isEmpty })
        let inVictim = keys.filter { key in
            let slot = RedisClusterClient.slot(of: "failover:" + RedisVisitorBackend.redisKey(key))
            return victim.slots.contains { $0.contains(slot) }
        }
        #expect(!inVictim.isEmpty)
        // Light load: one call at a time, the longest noted.
        let stop = Locked(false), longest = Locked(Duration.zero), calls = Locked(0)
        let lag = SchedulingLag()
        let load = Task.detached {
            var n = 0
            while !stop.value {
                let started = ContinuousClock.now
                _ = try? await backend.load(keys[n % keys.count])
                let elapsed = ContinuousClock.now - started
                longest.withValue { $0 = max($0, elapsed) }
                calls.withValue { $0 += 1 }
                n += 1
                try? await Task.sleep(for: .milliseconds(2))
            }
        }
        try await Task.sleep(for: .milliseconds(200))
        let victimServer = try #require(cluster.server(port: victim.port))
        victimServer.kill()
        let survivors = cluster.servers.filter { $0.port != victim.port }
        let victimSlot = try #require(victim.slots.first?.lowerBound)
        let promoted = await Task.detached {
            cluster.waitUntilOK(timeout: .seconds(30), among: survivors) { nodes in
                nodes.contains { $0.isMaster && !$0.failed && $0.port != victim.port && $0.slots.contains { $0.contains(victimSlot) } }
            }
        }.value
        #expect(promoted, "a replica took over the killed master's slots")
        let okAt = ContinuousClock.now
        var written: Duration?
        var lastError = ""
        while ContinuousClock.now - okAt < .seconds(10) {
            do {
                _ = try await backend.merge(inVictim.map { VisitorDataChanges(key: $0, goals: ["after"]) })
                written = ContinuousClock.now - okAt
                break
            } catch {
                lastError = "\(error)"
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        stop.set(true)
        await load.value
        let worstLag = lag.stop()
        print("RedisCluster failover: writes to the killed master's slots succeeded \(written.map { "\($0)" } ?? "never") after cluster_state:ok; "
              + "longest of \(calls.value) calls meanwhile: \(longest.value); latest wake-up of the process's tasks \(worstLag)")
        // The bound is the client's own waits; the load's task may have waited for a thread besides.
        let bound = timeout + .milliseconds(50)
        #expect(longest.value <= bound + worstLag || underThreadSanitizer,
                "a call took \(longest.value), its bound is \(bound), the process's tasks woke up to \(worstLag) late")
        let took = try #require(written, "no write to the killed master's slots succeeded within 10 s: \(lastError); \(client.topologyRefreshes) refreshes")
        #expect(took < .seconds(5) || underThreadSanitizer, "writes resumed \(took) after the promotion")
        #expect(try await backend.load(inVictim[0])?.goals == ["g", "after"], "the replica kept the data")
    }

    /// 1,000 slots resharded from one master to another (`redis-cli --cluster reshard`, keys moved
    /// with `MIGRATE`) while two instances decide: no request unanswered, no visitor shown two
    /// variations or bucketed twice, and every decision is in the cluster afterwards.
    @Test func reshardingUnderLoadLosesNoWriteAndBreaksNoClaim() async throws {
        let cluster = try await RedisCluster.started()
        let clientA = RedisClusterClient(seeds: cluster.seeds(keyPrefix: "reshard:"))
        let clientB = RedisClusterClient(seeds: cluster.seeds(keyPrefix: "reshard:"))
        defer { clientA.close(); clientB.close() }
        let a = try await ClaimingInstance(backend: RedisVisitorBackend(cluster: clientA), config: try Fixtures.baselineReallocated([50, 50]))
        let b = try await ClaimingInstance(backend: RedisVisitorBackend(cluster: clientB), config: try Fixtures.baselineReallocated([100, 0]))
        let masters = try cluster.nodes().filter { $0.isMaster && !$0.slots.isEmpty }
        let source = try #require(masters.first), target = try #require(masters.last)
        // Visitors before the reshard, so that it has keys to move.
        var answered: [String: String] = [:]
        var unanswered = 0, split = 0
        for n in 0..<600 {
            let id = "visitor-\(n)"
            guard let first = await a.request(id), let second = await b.request(id) else { unanswered += 1; continue }
            if first != second { split += 1 }
            answered[id] = first
        }
        _ = await a.store.flush()
        let cli = try #require(RedisCluster.cli)
        // On a thread of its own: the child process is waited for without holding a pool thread.
        let done = Locked(false)
        let reshard = Task {
            try await withCheckedThrowingContinuation { (finished: CheckedContinuation<String, any Error>) in
                Thread {
                    finished.resume(with: Result {
                        try RedisCluster.run(cli, ["--cluster", "reshard", "127.0.0.1:\(source.port)", "--cluster-from", source.id,
                                                   "--cluster-to", target.id, "--cluster-slots", "1000", "--cluster-yes"])
                    })
                    done.set(true)
                }.start()
            }
        }
        var n = 600
        while !done.value && n < 30_000 {
            let id = "visitor-\(n)", old = "visitor-\(n % 600)"
            n += 1
            guard let first = await a.request(id), let second = await b.request(id), let again = await b.request(old) else {
                unanswered += 1
                continue
            }
            if first != second || again != answered[old] { split += 1 }
            answered[id] = first
        }
        let output = try await reshard.value
        _ = await a.store.flush()
        _ = await b.store.flush()
        let moved = try cluster.nodes().first { $0.id == target.id }.map { $0.slots.reduce(0) { $0 + $1.count } } ?? 0
        let bucketing = (a.sink.events + b.sink.events).filter { $0.eventType == "bucketing" }
        let twice = Dictionary(grouping: bucketing, by: \.visitorId).values.filter { $0.count > 1 }.count
        // Read back through a client of the test's own.
        let checker = RedisClusterClient(seeds: cluster.seeds(keyPrefix: "reshard:"))
        defer { checker.close() }
        let backend = RedisVisitorBackend(cluster: checker)
        var lost = 0
        for (id, variation) in answered {
            let stored = try await backend.load(VisitorKey(namespace: "10035569-10034190", visitorId: id))
            if stored?.variationId(forExperienceId: "100334665") != variation { lost += 1 }
        }
        print("RedisCluster reshard: \(n) visitors, \(answered.count) answered during and around 1,000 slots moved "
            + "(target holds \(moved) slots); unanswered \(unanswered), split \(split), bucketed twice \(twice), lost \(lost); "
            + "redirections A \(clientA.redirections), B \(clientB.redirections); A \(a.store.counters); B \(b.store.counters)")
        #expect(output.contains("Moving slot") || moved > 0, "the reshard ran: \(output.suffix(300))")
        #expect(unanswered == 0)
        #expect(split == 0, "\(split) visitors shown two variations")
        #expect(twice == 0, "\(twice) visitors bucketed twice")
        #expect(lost == 0, "\(lost) decisions not in the cluster after the reshard")
        #expect(a.store.counters.claimFailures + b.store.counters.claimFailures == 0, "A: \(a.store.counters), B: \(b.store.counters)")
    }
}
