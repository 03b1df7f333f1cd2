import ConvertMemory
import ConvertRedis
import ConvertSharedStore
import ConvertStorage
import ConvertSynchronization
import ConvertTesting
import Foundation
import Testing

/// A node of a fake cluster on 127.0.0.1: answers each command as its script says at that
/// moment (`nil`: no answer ever, as a host cut off by the network), and can be killed (its
/// connections closed, later ones refused).
private final class FakeClusterNode: Sendable {
    typealias Script = @Sendable (_ command: [String]) -> RESPValue?

    private let listener: LoopbackListener
    private let state: Locked<(script: Script, connections: [Int32], killed: Bool, received: [String])>

    var port: Int { listener.port }
    /// The names of the commands received so far.
    var received: [String] { state.value.received }

    init(_ script: @escaping Script) throws {
        let listener = try LoopbackListener()
        let state = Locked<(script: Script, connections: [Int32], killed: Bool, received: [String])>((script, [], false, []))
        self.listener = listener
        self.state = state
        Thread {
            while true {
                let client = accept(listener.fd, nil, nil)
                guard client >= 0 else {
                    #if !canImport(Darwin)
                    _ = close(listener.fd)
                    #endif
                    return
                }
                let killed = state.withValue { state -> Bool in
                    if !state.killed { state.connections.append(client) }
                    return state.killed
                }
                if killed {
                    _ = close(client)
                    continue
                }
                Thread { Self.serve(client, state) }.start()
            }
        }.start()
    }

    deinit { kill() }

    /// Answers from now on as `script` says.
    func answer(_ script: @escaping Script) { state.withValue { $0.script = script } }

    /// Closes every connection and refuses new ones.
    func kill() {
        let connections = state.withValue { state -> [Int32] in
            state.killed = true
            defer { state.connections = [] }
            return state.connections
        }
        listener.stopAccepting()
        for connection in connections { shutdown(connection, Int32(SHUT_RDWR)) }
    }

    private static func serve(_ client: Int32, _ state: Locked<(script: Script, connections: [Int32], killed: Bool, received: [String])>) {
        var parser = RESPParser()
        var buffer = [UInt8](repeating: 0, count: 4096)
        reading: while true {
            let count = recv(client, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            parser.append(buffer[0..<count])
            while let value = try? parser.next() {
                let command = (value.arrayValue ?? []).compactMap(\.stringValue)
                let script = state.withValue { state in
                    state.received.append(command.first?.uppercased() ?? "")
                    return state.script
                }
                guard let reply = script(command) else { continue }
                let bytes = encode(reply)
                guard bytes.withUnsafeBytes({ send(client, $0.baseAddress, $0.count, sendWithoutSIGPIPE) }) == bytes.count else { break reading }
            }
        }
        state.withValue { $0.connections.removeAll { $0 == client } }
        _ = close(client)
    }

    private static func encode(_ value: RESPValue) -> [UInt8] {
        switch value {
        case .simpleString(let text): Array("+\(text)\r\n".utf8)
        case .error(let message): Array("-\(message)\r\n".utf8)
        case .integer(let number): Array(":\(number)\r\n".utf8)
        case .bulkString(let bytes?): Array("$\(bytes.count)\r\n".utf8) + Array(bytes) + Array("\r\n".utf8)
        case .bulkString(nil): Array("$-1\r\n".utf8)
        case .array(let elements?): Array("*\(elements.count)\r\n".utf8) + elements.flatMap(encode)
        case .array(nil): Array("*-1\r\n".utf8)
        }
    }

    /// A `CLUSTER SLOTS` reply: each range's master on 127.0.0.1.
    static func slots(_ ranges: [(ClosedRange<Int>, port: Int)]) -> RESPValue {
        .array(ranges.map { range, port in
            .array([.integer(Int64(range.lowerBound)), .integer(Int64(range.upperBound)),
                    .array([.bulkString(Data("127.0.0.1".utf8)), .integer(Int64(port))])])
        })
    }
}

/// A call routed to a master before the client's map moved its slots elsewhere (its replica
/// promoted), that fails after: the failure is that part's, not the whole cluster's.
@Suite(.timeLimit(.minutes(1)))
struct RedisClusterStaleRouteTests {
    /// What every fake master answers: no visitor data, the cluster ok, `OK` to the rest.
    private static let data: FakeClusterNode.Script = { command in
        switch command.first?.uppercased() {
        case "HGETALL": .array([])
        case "CLUSTER": command.dropFirst().first?.uppercased() == "INFO" ? .bulkString(Data("cluster_state:ok\r\n".utf8)) : nil
        case "PING": .simpleString("PONG")
        default: .simpleString("OK")
        }
    }

    /// Makes `a` the seed: it answers `CLUSTER SLOTS` with `slots` as they are when asked (port 0
    /// standing for its own), the rest as ``data``.
    private static func seed(_ a: FakeClusterNode, answering slots: Locked<RESPValue>) {
        let aPort = a.port
        a.answer { command in
            if command.prefix(2).map({ $0.uppercased() }) == ["CLUSTER", "SLOTS"] {
                guard case .array(let ranges?) = slots.value else { return nil }
                return .array(ranges.map { range in
                    guard case .array(var fields?) = range, case .array(let master?) = fields[2],
                          master[1] == .integer(0) else { return range }
                    fields[2] = .array([master[0], .integer(Int64(aPort))])
                    return .array(fields)
                })
            }
            return data(command)
        }
    }

    /// The configuration of a client seeded by `a`.
    private static func seed(_ a: FakeClusterNode, commandTimeout: Duration, poolSize: Int = 4) -> RedisConfiguration {
        var seed = RedisConfiguration(host: "127.0.0.1", port: a.port)
        seed.commandTimeout = commandTimeout
        seed.poolSize = poolSize
        return seed
    }

    /// A store on `cluster` once its map names `a` and `b`, its retries far off.
    private static func store(on cluster: RedisClusterClient, mapping a: FakeClusterNode, _ b: FakeClusterNode) async
        -> WriteBehindVisitorStore {
        #expect(await eventually { cluster.masters.map(\.configuration.port).sorted() == [a.port, b.port].sorted() },
                "the map names A and B")
        return WriteBehindVisitorStore(backend: RedisVisitorBackend(cluster: cluster), local: MemoryVisitorDataStore(),
                                       options: .init(retryDelay: .seconds(60), maximumRetryDelay: .seconds(60)))
    }

    /// A visitor whose key's slot is in `range`.
    private func visitor(in range: ClosedRange<Int>) -> VisitorKey {
        for number in 0... {
            let key = VisitorKey(namespace: "1-2", visitorId: "v\(number)")
            if range.contains(RedisClusterClient.slot(of: RedisVisitorBackend.redisKey(key))) { return key }
        }
        fatalError("unreachable")
    }

    /// Masters A (slots 0–8191) and B (8192–16383); B stops answering while a load waits on it;
    /// the map then names C, B's replica promoted, for B's slots; B dies, failing the load. A
    /// answers all along: no outage begins, and the failure is counted as a part's. Then every
    /// master fails: that is an outage.
    @Test func aCallToAMasterTheMapNoLongerNamesThatFailsStartsNoOutage() async throws {
        let low = 0...8191, high = 8192...16383
        let data = Self.data
        let b = try FakeClusterNode(data)
        let c = try FakeClusterNode(data)
        let a = try FakeClusterNode(data)
        let slotsNow = Locked(FakeClusterNode.slots([(low, 0), (high, b.port)]))
        Self.seed(a, answering: slotsNow)
        let cluster = RedisClusterClient(seeds: [Self.seed(a, commandTimeout: .seconds(10))])
        defer { cluster.close() }
        let store = await Self.store(on: cluster, mapping: a, b)
        #expect(await store.load(visitor(in: high)) == .notFound, "B answers before it fails")

        // B stops answering: a load routed to it waits; meanwhile the map moves B's slots to C.
        b.answer { _ in nil }
        let asked = b.received.count
        async let stale = store.load(visitor(in: high))
        #expect(await eventually { b.received.count > asked }, "the load reached B")
        slotsNow.set(FakeClusterNode.slots([(low, 0), (high, c.port)]))
        var moved = false
        for _ in 0..<100 {
            await cluster.refreshTopology()
            moved = cluster.masters.map(\.configuration.port).sorted() == [a.port, c.port].sorted()
            if moved { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(moved, "the map names C in B's place")
        b.kill()
        guard case .failed = await stale else {
            Issue.record("the load routed to B before the map changed did not fail")
            return
        }
        #expect(!cluster.isPartlyUnreachable, "every master in the map answers: the check at that moment alone says whole")
        #expect(store.counters.outages == 0, "a call to a master no longer in the map began an outage: \(store.counters)")
        #expect(store.counters.partFailures == 1, "\(store.counters)")
        #expect(await store.load(visitor(in: low)) == .notFound, "A's visitors still load")
        #expect(await store.load(visitor(in: high)) == .notFound, "B's visitors load from C")

        // Every master down: the whole cluster's outage.
        a.kill()
        c.kill()
        _ = await store.load(visitor(in: low))
        _ = await store.load(visitor(in: high))
        #expect(store.counters.outages == 1, "every master refused, and no outage began: \(store.counters)")
    }

    /// B answers, slowly, on its one pooled connection: a second load waits for that connection
    /// and runs out of its time, while B stays reachable (its pool took no outage) and A
    /// answers. That is one part's failure, not the whole cluster's outage.
    @Test func aCallThatRunsOutOfTimeAtAnAnsweringMasterStartsNoOutage() async throws {
        let low = 0...8191, high = 8192...16383
        let data = Self.data
        let b = try FakeClusterNode(data)
        let a = try FakeClusterNode(data)
        let slots = Locked(FakeClusterNode.slots([(low, 0), (high, b.port)]))
        Self.seed(a, answering: slots)
        let cluster = RedisClusterClient(seeds: [Self.seed(a, commandTimeout: .milliseconds(400), poolSize: 1)])
        defer { cluster.close() }
        let store = await Self.store(on: cluster, mapping: a, b)
        #expect(await store.load(visitor(in: high)) == .notFound, "B answers")

        // Each load takes B 300 ms of a 400 ms budget: the second waits for the first's connection.
        b.answer { command in
            if command.first?.uppercased() == "HGETALL" { usleep(300_000) }
            return data(command)
        }
        let first = Task { await store.load(VisitorKey(namespace: "1-2", visitorId: "first-\(visitor(in: high).visitorId)")) }
        let keys = (0..<4).map { n in
            (0...).lazy.map { VisitorKey(namespace: "1-2", visitorId: "slow\(n)-\($0)") }
                .first { high.contains(RedisClusterClient.slot(of: RedisVisitorBackend.redisKey($0))) }!
        }
        async let others = withTaskGroup(of: Void.self) { group in
            for key in keys { group.addTask { _ = await store.load(key) } }
        }
        _ = await first.value
        await others
        #expect(store.counters.loadFailures > 0, "a load ran out of its time: \(store.counters)")
        let unavailable = cluster.masters.filter { !$0.isAvailable }.count
        #expect(unavailable == 0, "B's pool took no outage: it answered every call it was sent")
        #expect(store.counters.outages == 0, "a call out of time at an answering master began an outage: \(store.counters)")
        #expect(store.counters.partFailures == store.counters.loadFailures, "\(store.counters)")
        #expect(await store.load(visitor(in: low)) == .notFound, "A's visitors still load")
    }
}
