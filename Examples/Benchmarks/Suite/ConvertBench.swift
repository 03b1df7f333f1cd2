import ConvertRedis
import ConvertTransport
import Foundation

/// The SDK's benchmarks as a command line: `convert-bench` runs them, and a package that brings
/// its own Redis transport (TLS) runs the Redis benchmarks through it with ``RedisAccess``.
///
/// ```swift
/// exit(await ConvertBench.main(CommandLine.arguments))
/// ```
public enum ConvertBench {
    /// How the Redis benchmarks reach their server: the transport their clients use (the base
    /// configuration comes from `--redis-url`, or `--redis-host` and `--redis-port`), and the
    /// arguments `redis-benchmark` needs to reach the same server.
    public struct RedisAccess: Sendable {
        /// Options this access reads beside the common ones (names without `--`), for the usage.
        public var options: [String]
        /// The transport for the command line's options.
        public var transport: @Sendable ([String: String]) throws -> any RedisTransport
        /// What `redis-benchmark` needs beside `-h` and `-p` to reach the server (e.g. `--tls`).
        public var referenceArguments: @Sendable ([String: String]) -> [String]

        /// An access through `transport`, reading `options` too.
        public init(options: [String] = [], transport: @escaping @Sendable ([String: String]) throws -> any RedisTransport,
                    referenceArguments: @escaping @Sendable ([String: String]) -> [String] = { _ in [] }) {
            self.options = options
            self.transport = transport
            self.referenceArguments = referenceArguments
        }

        /// Plain TCP.
        public static let plain = RedisAccess(transport: { _ in RedisPlainTransport() })
    }

    /// Runs the command line `arguments` (the tool's name first) and answers the exit status:
    /// 0, 1 when a benchmark failed, 2 for a usage error. Prints one JSON line per benchmark.
    public static func main(_ arguments: [String], tool: String = "convert-bench", redis: RedisAccess = .plain) async -> Int32 {
        let usage = """
        usage: \(tool) <decode|decide|features|request|hash|track|ready|breakdown|all> [--workload FILE]
                     [--iterations N] [--visitors N] [--mode persist|nopersist|file] [--threads N]
                     [--store memory|redis] [--redis-url URL | --redis-host HOST --redis-port PORT] [--redis-cluster]
                     [--instances 1|2] [--gap-ms N] [--second-config FILE] [--tracking on|off]\(redis.options.map { " [--\($0) VALUE]" }.joined())
               \(tool) --help | --version
        """
        var arguments = Array(arguments.dropFirst())
        // Anywhere on the line, as in the convert tool: "convert-bench decide --help" shows the usage too.
        if arguments.contains("--help") || arguments.contains("-h") {
            print(usage)
            return 0
        }
        if arguments.contains("--version") {
            print("\(tool) \(ConvertAgent.version)")
            return 0
        }
        func usageError(_ problem: String) -> Int32 {
            FileHandle.standardError.write(Data("\(tool): \(problem)\n\(usage)\n".utf8))
            return 2
        }
        guard let command = arguments.first else { return usageError("give a command") }
        guard !command.hasPrefix("-") else { return usageError("unknown option \(command)") }
        arguments.removeFirst()
        let known = Set(["workload", "visitors", "hash-strings", "iterations", "threads", "mode", "store", "redis-url",
                         "redis-host", "redis-port", "instances", "gap-ms", "second-config", "tracking"] + redis.options)
        var options: [String: String] = [:]
        while !arguments.isEmpty {
            let name = arguments.removeFirst()
            // The one option without a value.
            if name == "--redis-cluster" {
                options["redis-cluster"] = "yes"
                continue
            }
            guard name.hasPrefix("--") else { return usageError("unexpected argument \"\(name)\"") }
            guard known.contains(String(name.dropFirst(2))) else { return usageError("unknown option \(name)") }
            guard !arguments.isEmpty else { return usageError("\(name) needs a value") }
            options[String(name.dropFirst(2))] = arguments.removeFirst()
        }

        do {
            var workload = try Workload.load(options["workload"])
            if let visitors = options["visitors"].flatMap(Int.init) { workload.visitors = visitors }
            if let strings = options["hash-strings"].flatMap(Int.init) { workload.hashStrings = strings }
            let iterations = options["iterations"].flatMap(Int.init)
            let threads = options["threads"].flatMap(Int.init) ?? 1
            guard (1...256).contains(threads) else { throw BenchError("--threads must be 1 to 256") }
            let commands = command == "all" ? ["decode", "decide", "features", "hash", "track", "ready"] : [command]
            for name in commands {
                switch name {
                case "decode": try Benchmarks.decode(workload, iterations: iterations ?? 2000)
                case "decide" where options["store"] == "redis":
                    let server = RedisServerAccess(access: redis, configuration: try redisConfiguration(options), options: options)
                    try await Benchmarks.decideOnRedis(workload, server: server, options: options)
                case "decide":
                    guard options["store"] == nil || options["store"] == "memory" else { throw BenchError("--store must be memory or redis") }
                    try await Benchmarks.decide(workload, mode: options["mode"] ?? "persist", threads: threads)
                case "features": try await Benchmarks.features(workload, iterations: iterations ?? 20000)
                case "request":
                    guard [nil, "on", "off"].contains(options["tracking"]) else { throw BenchError("--tracking must be on or off") }
                    try await Benchmarks.request(workload, iterations: iterations ?? 40000, tracking: options["tracking"] == "on")
                case "hash": Benchmarks.hash(workload)
                case "track": try await Benchmarks.track(workload)
                case "ready": try await Benchmarks.ready(workload, runs: iterations ?? 20)
                case "breakdown": try await Benchmarks.breakdown(workload, repeats: max(1, iterations ?? 1))
                default: return usageError("unknown command \(name)")
                }
            }
        } catch {
            FileHandle.standardError.write(Data("\(tool): \(error)\n".utf8))
            return 1
        }
        return 0
    }

    /// The server the Redis benchmarks use: `--redis-url`, else `--redis-host`/`--redis-port`
    /// (127.0.0.1:6379 by default).
    static func redisConfiguration(_ options: [String: String]) throws -> RedisConfiguration {
        if let url = options["redis-url"] {
            guard options["redis-host"] == nil, options["redis-port"] == nil else {
                throw BenchError("give --redis-url or --redis-host/--redis-port, not both")
            }
            do {
                return try RedisConfiguration(url: url)
            } catch {
                throw BenchError("--redis-url: \(error)")
            }
        }
        guard let port = Int(options["redis-port"] ?? "6379") else { throw BenchError("--redis-port must be a number") }
        return RedisConfiguration(host: options["redis-host"] ?? "127.0.0.1", port: port)
    }
}

/// A Redis server as the benchmarks reach it: clients made the access's way, with the
/// benchmark's key prefix, pool size and time to live over the base configuration.
struct RedisServerAccess: Sendable {
    let access: ConvertBench.RedisAccess
    var configuration: RedisConfiguration
    let options: [String: String]

    /// Whether `--redis-cluster` was given: the server is a cluster node, the seed.
    var isCluster: Bool { options["redis-cluster"] != nil }

    func client(prefix: String, poolSize: Int = 4, commandTimeout: Duration? = nil) throws -> RedisClient {
        let transport = try access.transport(options)
        return RedisClient(configuration: configured(prefix: prefix, poolSize: poolSize, commandTimeout: commandTimeout, transport),
                           transport: transport)
    }

    func cluster(prefix: String) throws -> RedisClusterClient {
        let transport = try access.transport(options)
        return RedisClusterClient(seeds: [configured(prefix: prefix, poolSize: 4, commandTimeout: nil, transport)], transport: transport)
    }

    private func configured(prefix: String, poolSize: Int, commandTimeout: Duration?, _ transport: any RedisTransport) -> RedisConfiguration {
        var configuration = configuration
        configuration.keyPrefix = prefix
        configuration.ttl = .seconds(3_600)
        configuration.poolSize = poolSize
        configuration.tls = transport.encrypts
        if let commandTimeout { configuration.commandTimeout = commandTimeout }
        return configuration
    }

    /// The server for messages, without its password.
    var name: String { "\(configuration.host):\(configuration.port)" }

    var reference: RedisBenchmarkTool? {
        var extra = access.referenceArguments(options) + (isCluster ? ["--cluster"] : [])
        if let password = configuration.password {
            if let username = configuration.username { extra += ["--user", username] }
            extra += ["-a", password]
        }
        if configuration.database != 0 { extra += ["--dbnum", String(configuration.database)] }
        return RedisBenchmarkTool(host: configuration.host, port: configuration.port, extra: extra)
    }
}
