// convert-bench: speed and memory of the SDK, one JSON line per sub-command.
// Build it in release: swift run -c release convert-bench <command> [--workload FILE] [options]
import Foundation

let usage = """
usage: convert-bench <decode|decide|features|hash|track|ready|breakdown|all> [--workload FILE]
                     [--iterations N] [--visitors N] [--mode persist|nopersist|file] [--threads N]
"""

var arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first, !command.hasPrefix("-") else {
    FileHandle.standardError.write(Data((usage + "\n").utf8))
    exit(2)
}
arguments.removeFirst()
var options: [String: String] = [:]
while !arguments.isEmpty {
    let name = arguments.removeFirst()
    guard name.hasPrefix("--"), !arguments.isEmpty else {
        FileHandle.standardError.write(Data("convert-bench: bad argument \(name)\n\(usage)\n".utf8))
        exit(2)
    }
    options[String(name.dropFirst(2))] = arguments.removeFirst()
}

let known: Set = ["workload", "visitors", "hash-strings", "iterations", "threads", "mode"]
if let unknown = options.keys.sorted().first(where: { !known.contains($0) }) {
    FileHandle.standardError.write(Data("convert-bench: unknown option --\(unknown)\n\(usage)\n".utf8))
    exit(2)
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
        case "decide": try await Benchmarks.decide(workload, mode: options["mode"] ?? "persist", threads: threads)
        case "features": try await Benchmarks.features(workload, iterations: iterations ?? 20000)
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
