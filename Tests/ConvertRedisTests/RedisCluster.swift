import ConvertRedis
import Foundation

/// Six `redis-server`s of the test's own on 127.0.0.1 made into a cluster of three masters with
/// one replica each (`redis-cli --cluster create`); every server stopped when released.
final class RedisCluster: Sendable {
    /// The `redis-cli` executable, from `PATH`, `/usr/bin` or `/usr/local/bin`.
    static let cli: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let directories = path.split(separator: ":").map(String.init) + ["/usr/bin", "/usr/local/bin"]
        return directories.map { $0 + "/redis-cli" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    static var isAvailable: Bool { RedisServer.isAvailable && cli != nil }

    let servers: [RedisServer]

    /// One node as `CLUSTER NODES` shows it.
    struct Node {
        let id: String
        let port: Int
        let isMaster: Bool
        let failed: Bool
        let slots: [ClosedRange<Int>]
    }

    /// Starts the six servers, creates the cluster and waits until every node says
    /// `cluster_state:ok`. A node unreachable for `nodeTimeout` milliseconds is taken for failed
    /// (its replica then promoted).
    init(nodeTimeout: Int = 1_000) throws {
        guard let cli = Self.cli else { throw ServerError("redis-cli is not installed") }
        var servers: [RedisServer] = []
        for port in try Self.ports(6) {
            servers.append(try RedisServer(port: port, options: [
                "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "\(nodeTimeout)",
            ]))
        }
        self.servers = servers
        let output = try Self.run(cli, ["--cluster", "create"] + servers.map { "127.0.0.1:\($0.port)" }
            + ["--cluster-replicas", "1", "--cluster-yes"])
        guard waitUntilOK(timeout: .seconds(30), also: { _ in self.replicasInSync }) else {
            throw ServerError("the cluster did not reach cluster_state:ok with three replicas in sync: \(output)")
        }
    }

    /// Starts a cluster off the cooperative pool. A port found free can be taken before its
    /// node binds it (another suite's cluster starting at once): then the cluster is started
    /// again on other ports, up to three times.
    static func started(nodeTimeout: Int = 1_000) async throws -> RedisCluster {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result {
                    for _ in 1..<3 {
                        do { return try RedisCluster(nodeTimeout: nodeTimeout) } catch where "\(error)".contains("Address already in use") {}
                    }
                    return try RedisCluster(nodeTimeout: nodeTimeout)
                })
            }.start()
        }
    }

    /// Seed configurations (every node) for a client under test.
    func seeds(keyPrefix: String = "") -> [RedisConfiguration] {
        servers.map { $0.configuration(keyPrefix: keyPrefix) }
    }

    /// The nodes as seeds with `keyPrefix` and calls bounded by `commandTimeout`.
    func seeds(keyPrefix: String, commandTimeout: Duration) -> [RedisConfiguration] {
        seeds(keyPrefix: keyPrefix).map { seed in
            var seed = seed
            seed.commandTimeout = commandTimeout
            return seed
        }
    }

    /// The server listening on `port`.
    func server(port: Int) -> RedisServer? { servers.first { $0.port == port } }

    /// Whether every running node in `among` (all by default) says `cluster_state:ok` and
    /// agrees on three masters covering every slot (and on `also`, when given), within `timeout`.
    func waitUntilOK(timeout: Duration, among: [RedisServer]? = nil, also: ([Node]) -> Bool = { _ in true }) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let ok = (among ?? servers).allSatisfy { server in
                (try? server.command(["CLUSTER", "INFO"]).stringValue)?.contains("cluster_state:ok") == true
            }
            if ok, let nodes = try? nodes(from: (among ?? servers)[0]),
               nodes.filter({ $0.isMaster && !$0.failed && !$0.slots.isEmpty }).count == 3, also(nodes) {
                return true
            }
            usleep(50_000)
        }
        return false
    }

    /// Whether three nodes are replicas whose link to their master is up (a replica not in sync
    /// yet would not take over its master's slots).
    private var replicasInSync: Bool {
        servers.filter { server in
            let text = (try? server.command(["INFO", "replication"]).stringValue) ?? ""
            return text.contains("role:slave") && text.contains("master_link_status:up")
        }.count == 3
    }

    /// The nodes as `server` (the first by default) sees them.
    func nodes(from server: RedisServer? = nil) throws -> [Node] {
        let text = try (server ?? servers[0]).command(["CLUSTER", "NODES"]).stringValue ?? ""
        return text.split(whereSeparator: \.isNewline).compactMap { line in
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count >= 8, let colon = fields[1].lastIndex(of: ":"),
                  let port = Int(fields[1][fields[1].index(after: colon)...].prefix { $0 != "@" }) else { return nil }
            let flags = fields[2].split(separator: ",")
            let slots: [ClosedRange<Int>] = fields.dropFirst(8).compactMap { field in
                let bounds = field.split(separator: "-").compactMap { Int($0) }
                if bounds.count == 2 { return bounds[0]...bounds[1] }
                if bounds.count == 1, !field.hasPrefix("[") { return bounds[0]...bounds[0] }
                return nil
            }
            return Node(id: fields[0], port: port, isMaster: flags.contains("master"),
                        failed: flags.contains("fail") || flags.contains("fail?"), slots: slots)
        }
    }

    /// The master serving `slot`.
    func master(of slot: Int) throws -> Node? {
        try nodes().first { $0.isMaster && $0.slots.contains { $0.contains(slot) } }
    }

    /// `count` ports below the kernel's ephemeral range whose cluster bus port (+10000) is free
    /// as well.
    private static func ports(_ count: Int) throws -> [Int] {
        var ports: [Int] = []
        var attempts = 0
        while ports.count < count {
            attempts += 1
            guard attempts < 1_000 else { throw ServerError("no free port pair found for a cluster node") }
            let port = Int.random(in: 12_000..<22_000)
            guard !ports.contains(port), let listener = try? LoopbackListener(backlog: 1, port: port) else { continue }
            defer { listener.close() }
            guard let bus = try? LoopbackListener(backlog: 1, port: port + 10_000) else { continue }
            bus.close()
            ports.append(port)
        }
        return ports
    }

    /// Runs `path` to its end; its output (and error output).
    @discardableResult
    static func run(_ path: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ServerError("\(path) \(arguments.joined(separator: " ")) exited \(process.terminationStatus): \(output)")
        }
        return output
    }
}
