import ConvertSynchronization
import Foundation

/// A Redis Cluster (or Valkey cluster): one ``RedisClient`` per master, each command sent to the
/// master of its key's slot.
///
/// The topology comes from `CLUSTER SLOTS` (asked of any reachable node), at start, every 10 s,
/// when a node becomes unavailable (then every 100 ms until every slot's master is reachable and serving
/// again: a replica promoted in its place is found that soon, and the visitor backend told) and
/// after a `MOVED` reply. A call
/// never waits for it: a key whose master is not known yet goes to a seed, whose `MOVED` the
/// call follows. Every node is reached with the first seed's configuration (password, key
/// prefix, timeouts, pool size) and the host and port the cluster announces, through the one
/// transport given.
///
/// **Routing.** A key's slot is CRC16 (XMODEM) of the key as sent, key prefix included, or of
/// its `{hash tag}`, modulo 16384. A pipeline whose keys are all in one slot goes to that slot's
/// master in one write, so its commands keep their order; a batch of writes behind over many
/// visitors is split per master, one pipeline each, sent at once, and the replies are put back
/// in order.
///
/// **Redirections.** A `MOVED` reply updates that slot's master and the call is sent again once
/// to it; an `ASK` reply sends `ASKING` and the call to the node named, without changing the map.
/// Either way within the call's one `commandTimeout`.
///
/// ```swift
/// let cluster = RedisClusterClient(seeds: [RedisConfiguration(host: "10.0.0.5", keyPrefix: "convert:"),
///                                          RedisConfiguration(host: "10.0.0.6", keyPrefix: "convert:")])
/// let store = WriteBehindVisitorStore(backend: RedisVisitorBackend(cluster: cluster), local: MemoryVisitorDataStore())
/// // …
/// cluster.close()   // at shutdown, after the SDK's
/// ```
public final class RedisClusterClient: Sendable {
    /// The configuration every node is reached with (the first seed's), host and port aside.
    public let configuration: RedisConfiguration
    private let seeds: [String]
    private let transport: any RedisTransport
    private let state = Locked(State())

    private struct State: Sendable {
        var nodes: [String: RedisClient] = [:]
        /// The master of each slot, `nil` while unknown.
        var owners = [RedisClient?](repeating: nil, count: RedisClusterClient.slotCount)
        var refreshing = false
        var refreshes = 0
        var redirections = 0
        var closed = false
        /// Since when a topology read has found some slot's master unreachable.
        var unreachableSince: ContinuousClock.Instant?
        var recoveryHandlers: [@Sendable (Duration) -> Void] = []
    }

    /// How many slots a cluster has.
    package static let slotCount = 16_384

    /// A client for the cluster the `seeds` belong to (any of its nodes; the first seed's
    /// configuration is used for every node), whose connections `transport` opens. Connects
    /// lazily; asks for the topology at once, in the background.
    public init(seeds: [RedisConfiguration], transport: any RedisTransport = RedisPlainTransport()) {
        let seeds = seeds.isEmpty ? [RedisConfiguration()] : seeds
        configuration = seeds[0]
        self.seeds = seeds.map { Self.address($0.host, $0.port) }
        self.transport = transport
        for seed in seeds { _ = node(host: seed.host, port: seed.port) }
        // A thread of its own, as each node's connector: a busy cooperative pool (the app's
        // requests) must not delay finding a promoted replica.
        let loop = Thread { [weak self] in
            var sinceFull: Duration = .zero
            var first = true
            while true {
                if !first { usleep(UInt32(Self.outageRefreshInterval.components.attoseconds / 1_000_000_000_000)) }
                sinceFull += Self.outageRefreshInterval
                guard let cluster = self, !cluster.isClosed else { return }
                if first || sinceFull >= Self.refreshInterval || cluster.hasUnreachableMaster || cluster.isRecovering {
                    first = false
                    sinceFull = .zero
                    cluster.refreshNow()
                }
            }
        }
        loop.name = "convert-redis-cluster-topology"
        loop.start()
    }

    private var isClosed: Bool { state.withValue { $0.closed } }

    deinit { close() }

    /// Closes every node's client; later calls fail with ``RedisError/clientClosed``.
    public func close() {
        let nodes = state.withValue { state in
            state.closed = true
            return Array(state.nodes.values)
        }
        // The topology thread sees `closed` within its interval and ends.
        for node in nodes { node.close() }
    }

    /// The topology is asked for this often.
    static let refreshInterval: Duration = .seconds(10)
    /// … and this often while a slot's master is unreachable.
    static let outageRefreshInterval: Duration = .milliseconds(100)

    // MARK: Slots

    /// The slot of `key` as sent (key prefix included): CRC16 of its `{hash tag}` when it has a
    /// non-empty one, else of the whole key, modulo 16384.
    package static func slot(of key: String) -> Int {
        var key = key
        return key.withUTF8 { bytes in
            var part = bytes[...]
            if let open = bytes.firstIndex(of: UInt8(ascii: "{")),
               let close = bytes[(open + 1)...].firstIndex(of: UInt8(ascii: "}")), close > open + 1 {
                part = bytes[(open + 1)..<close]
            }
            return Int(crc16(part) & 0x3FFF)
        }
    }

    /// CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, as Redis Cluster uses.
    package static func crc16<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc = (crc << 8) ^ crcTable[Int((crc >> 8) ^ UInt16(byte))]
        }
        return crc
    }

    private static let crcTable: [UInt16] = (0..<256).map { index in
        var crc = UInt16(index) << 8
        for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
        return crc
    }

    /// The slot of the first key of `command`, with the key prefix; `nil` without a key.
    func slot(of command: RedisCommand) -> Int? {
        for argument in command.arguments {
            if case .key(let key) = argument { return Self.slot(of: configuration.keyPrefix + key) }
        }
        return nil
    }

    // MARK: Nodes

    private static func address(_ host: String, _ port: Int) -> String { "\(host):\(port)" }

    /// The client of the node at `host:port`, made on first use.
    func node(host: String, port: Int) -> RedisClient {
        state.withValue { Self.node(host: host, port: port, in: &$0, make: makeNode) }
    }

    private static func node(host: String, port: Int, in state: inout State,
                             make: (String, Int) -> RedisClient) -> RedisClient {
        let address = address(host, port)
        if let node = state.nodes[address] { return node }
        let node = make(host, port)
        if state.closed { node.close() }
        state.nodes[address] = node
        return node
    }

    /// Every node's client is made here: the first seed's configuration at the node's address,
    /// the cluster's transport, and a topology refresh when it finds its node unreachable.
    private func makeNode(host: String, port: Int) -> RedisClient {
        var configuration = configuration
        configuration.host = host
        configuration.port = port
        let node = RedisClient(configuration: configuration, transport: transport)
        node.subscribe { [weak self] event in
            if case .unavailable = event { self?.scheduleRefresh() }
        }
        return node
    }

    /// The master of `slot`; a reachable seed when unknown (its `MOVED` tells the master).
    package func owner(of slot: Int?) -> RedisClient {
        state.withValue { state in
            if let slot, let owner = state.owners[slot] { return owner }
            let seeds = seeds.compactMap { state.nodes[$0] }
            return seeds.first(where: \.isAvailable) ?? seeds[0]
        }
    }

    /// Whether some slot's master is unreachable now.
    private var hasUnreachableMaster: Bool { state.withValue { Self.hasUnreachableMaster($0) } }

    private static func hasUnreachableMaster(_ state: State) -> Bool {
        var seen = Set<ObjectIdentifier>()
        for owner in state.owners {
            guard let owner, seen.insert(ObjectIdentifier(owner)).inserted else { continue }
            if !owner.isAvailable { return true }
        }
        return false
    }

    /// Whether some slot's master is unreachable while another master answers: one part of the
    /// cluster is down, not the whole.
    package var isPartlyUnreachable: Bool {
        let masters = scanMasters(beside: nil)
        return masters.down && masters.othersUp
    }

    /// Whether a call's failure at `node` concerns one part of the cluster only: another master
    /// in the map answers, and `node` is no longer a master in the map (the call was routed
    /// before the map changed: its master failed over) or some master is unreachable. A call
    /// routed to a dead master just before a topology read replaced it fails after that read,
    /// when every master in the map answers: the map alone would take it for the whole cluster's
    /// failure.
    func isPartFailure(at node: RedisClient) -> Bool {
        let masters = scanMasters(beside: node)
        return masters.othersUp && (masters.down || !masters.includesNode)
    }

    /// Whether a master of the map other than `node` answers.
    func othersAnswer(beside node: RedisClient) -> Bool {
        scanMasters(beside: node).othersUp
    }

    /// The distinct masters of the map: whether one is unreachable, whether one other than
    /// `node` answers, and whether `node` is among them.
    private func scanMasters(beside node: RedisClient?) -> (down: Bool, othersUp: Bool, includesNode: Bool) {
        state.withValue { state in
            var seen = Set<ObjectIdentifier>()
            var down = false, othersUp = false, includesNode = false
            for owner in state.owners {
                guard let owner, seen.insert(ObjectIdentifier(owner)).inserted else { continue }
                if owner === node { includesNode = true }
                if !owner.isAvailable { down = true } else if owner !== node { othersUp = true }
            }
            return (down, othersUp, includesNode)
        }
    }

    /// Whether a master was unreachable and the cluster has not yet been found serving every
    /// slot again.
    private var isRecovering: Bool { state.withValue { $0.unreachableSince != nil } }

    /// Calls `handler` when a topology read finds every slot's master reachable again after one
    /// was not (its replica promoted, or the master back) and every master says the cluster is
    /// ok, with how long one was not.
    func subscribeRecovered(_ handler: @escaping @Sendable (Duration) -> Void) {
        state.withValue { $0.recoveryHandlers.append(handler) }
    }

    /// How many times the topology was read (for tests).
    package var topologyRefreshes: Int { state.withValue { $0.refreshes } }

    /// How many `MOVED` and `ASK` replies were followed (for tests).
    package var redirections: Int { state.withValue { $0.redirections } }

    /// The master clients, one per distinct master in the map.
    package var masters: [RedisClient] {
        state.withValue { state in
            var seen = Set<ObjectIdentifier>()
            return state.owners.compactMap { owner in
                guard let owner, seen.insert(ObjectIdentifier(owner)).inserted else { return nil }
                return owner
            }
        }
    }

    // MARK: Topology

    /// Asks for a topology refresh in the background, unless one is under way.
    func scheduleRefresh() {
        let start = state.withValue { state -> Bool in
            guard !state.closed, !state.refreshing else { return false }
            return true
        }
        guard start else { return }
        Thread { [weak self] in self?.refreshNow() }.start()
    }

    /// Reads `CLUSTER SLOTS` from the first node that answers (masters first, then seeds) and
    /// maps each slot to its master; `false` when none answered. One refresh at a time: a call
    /// while one runs returns `false` at once.
    @discardableResult
    package func refreshTopology() async -> Bool {
        await withCheckedContinuation { continuation in
            Thread { [weak self] in continuation.resume(returning: self?.refreshNow() ?? false) }.start()
        }
    }

    /// ``refreshTopology()`` on the calling thread, blocking it (each call within its bound).
    @discardableResult
    private func refreshNow() -> Bool {
        let candidates: [RedisClient]? = state.withValue { state in
            guard !state.closed, !state.refreshing else { return nil }
            state.refreshing = true
            var seen = Set<ObjectIdentifier>()
            let all = state.owners.compactMap { $0 } + seeds.compactMap { state.nodes[$0] } + Array(state.nodes.values)
            return all.filter { seen.insert(ObjectIdentifier($0)).inserted }
        }
        guard let candidates else { return false }
        defer { state.withValue { $0.refreshing = false } }
        let ordered = candidates.filter(\.isAvailable) + candidates.filter { !$0.isAvailable }
        for candidate in ordered {
            guard let reply = try? candidate.perform([["CLUSTER", "SLOTS"]]).first,
                  let ranges = Self.slotRanges(reply, host: candidate.configuration.host), !ranges.isEmpty
            else { continue }
            let recovering = state.withValue { state -> (since: ContinuousClock.Instant, masters: [RedisClient])? in
                for range in ranges {
                    let master = Self.node(host: range.host, port: range.port, in: &state, make: makeNode)
                    for slot in range.slots { state.owners[slot] = master }
                }
                state.refreshes += 1
                if Self.hasUnreachableMaster(state) {
                    if state.unreachableSince == nil { state.unreachableSince = .now }
                    return nil
                }
                guard let since = state.unreachableSince else { return nil }
                var seen = Set<ObjectIdentifier>()
                return (since, state.owners.compactMap { $0 }.filter { seen.insert(ObjectIdentifier($0)).inserted })
            }
            // Every slot has a reachable master again; it serves once each master says the
            // cluster is ok (a promoted replica answers CLUSTERDOWN for a moment after its ROLE
            // changes, and writes sent then would fail back into the store's backoff).
            if let recovering, Self.allServing(recovering.masters) {
                let handlers = state.withValue { state -> [@Sendable (Duration) -> Void] in
                    guard state.unreachableSince == recovering.since else { return [] }
                    state.unreachableSince = nil
                    return state.recoveryHandlers
                }
                let after = ContinuousClock.now - recovering.since
                for handler in handlers { handler(after) }
            }
            return true
        }
        return false
    }

    /// Whether every one of `masters` answers `CLUSTER INFO` with `cluster_state:ok`.
    private static func allServing(_ masters: [RedisClient]) -> Bool {
        for master in masters {
            guard case .bulkString(let bytes?)? = try? master.perform([["CLUSTER", "INFO"]]).first,
                  String(decoding: bytes, as: UTF8.self).contains("cluster_state:ok") else { return false }
        }
        return true
    }

    /// The slot ranges and their masters in a `CLUSTER SLOTS` reply; an empty announced host is
    /// the host asked.
    static func slotRanges(_ reply: RESPValue, host asked: String) -> [(slots: ClosedRange<Int>, host: String, port: Int)]? {
        guard let entries = reply.arrayValue else { return nil }
        var ranges: [(slots: ClosedRange<Int>, host: String, port: Int)] = []
        for entry in entries {
            guard let fields = entry.arrayValue, fields.count >= 3,
                  let start = fields[0].intValue, let end = fields[1].intValue, start <= end, start >= 0, end < slotCount,
                  let master = fields[2].arrayValue, master.count >= 2, let port = master[1].intValue
            else { return nil }
            var host = master[0].stringValue ?? ""
            if host.isEmpty || host == "?" { host = asked }
            ranges.append((Int(start)...Int(end), host, Int(port)))
        }
        return ranges
    }

    /// The node to send a redirected call to; a `MOVED` updates the map and schedules a refresh.
    func follow(_ redirect: Redirect) -> RedisClient {
        let target = node(host: redirect.host, port: redirect.port)
        state.withValue { $0.redirections += 1 }
        if !redirect.ask, (0..<Self.slotCount).contains(redirect.slot) {
            state.withValue { $0.owners[redirect.slot] = target }
            scheduleRefresh()
        }
        return target
    }
}
