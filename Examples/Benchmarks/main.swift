// convert-bench: speed and memory of the SDK, one JSON line per sub-command.
// Build it in release: swift run -c release convert-bench <command> [--workload FILE] [options]
import ConvertTransport
import Foundation

let usage = """
usage: convert-bench <decode|decide|features|request|hash|track|ready|breakdown|all> [--workload FILE]
                     [--iterations N] [--visitors N] [--mode persist|nopersist|file] [--threads N]
                     [--store memory|redis] [--redis-host HOST] [--redis-port PORT]
                     [--instances 1|2] [--gap-ms N] [--second-config FILE]
       convert-bench --help | --version
"""

var arguments = Array(CommandLine.arguments.dropFirst())
// Anywhere on the line, as in the convert tool: "convert-bench decide --help" shows the usage too.
if arguments.contains("--help") || arguments.contains("-h") {
    print(usage)
    exit(0)
}
if arguments.contains("--version") {
    print("convert-bench \(ConvertAgent.version)")
    exit(0)
}
/// Exits with status 2 after naming what is wrong with the command line.
func usageError(_ problem: String) -> Never {
    FileHandle.standardError.write(Data("convert-bench: \(problem)\n\(usage)\n".utf8))
    exit(2)
}

guard let command = arguments.first else { usageError("give a command") }
guard !command.hasPrefix("-") else { usageError("unknown option \(command)") }
arguments.removeFirst()
let known: Set = ["workload", "visitors", "hash-strings", "iterations", "threads", "mode", "store", "redis-host", "redis-port",
                   "instances", "gap-ms", "second-config"]
var options: [String: String] = [:]
while !arguments.isEmpty {
    let name = arguments.removeFirst()
    guard name.hasPrefix("--") else { usageError("unexpected argument \"\(name)\"") }
    guard known.contains(String(name.dropFirst(2))) else { usageError("unknown option \(name)") }
    guard !arguments.isEmpty else { usageError("\(name) needs a value") }
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
            try await Benchmarks.decideOnRedis(workload, host: options["redis-host"] ?? "127.0.0.1",
                                               port: Int(options["redis-port"] ?? "6379") ?? 6379, options: options)
        case "decide":
            guard options["store"] == nil || options["store"] == "memory" else { throw BenchError("--store must be memory or redis") }
            try await Benchmarks.decide(workload, mode: options["mode"] ?? "persist", threads: threads)
        case "features": try await Benchmarks.features(workload, iterations: iterations ?? 20000)
        case "request": try await Benchmarks.request(workload, iterations: iterations ?? 40000)
        case "hash": Benchmarks.hash(workload)
        case "track": try await Benchmarks.track(workload)
        case "ready": try await Benchmarks.ready(workload, runs: iterations ?? 20)
        case "breakdown": try await Benchmarks.breakdown(workload, repeats: max(1, iterations ?? 1))
        default:
            FileHandle.standardError.write(Data("convert-bench: unknown command \(name)\n\(usage)\n".utf8))
            exit(2)
        }
    }
} catch {
    FileHandle.standardError.write(Data("convert-bench: \(error)\n".utf8))
    exit(1)
}
