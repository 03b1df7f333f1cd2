// convert-redis-bench: convert-bench's Redis benchmarks over TLS (`rediss://`), beside
// `redis-benchmark --tls` on the same server. Build it in release:
//   swift build -c release --package-path Integrations/ConvertRedisTLS --product convert-redis-bench
//   convert-redis-bench decide --store redis --redis-url rediss://127.0.0.1:6380 --redis-ca ca.crt [--instances 2]
import ConvertBench
import ConvertRedis
import ConvertRedisTLS
import Foundation

let access = ConvertBench.RedisAccess(
    options: ["redis-ca", "redis-cert", "redis-key", "redis-server-name"],
    transport: { options in
        var tls = RedisTLSConfiguration(trustRoots: options["redis-ca"].map { .file($0) } ?? .system,
                                        serverName: options["redis-server-name"])
        switch (options["redis-cert"], options["redis-key"]) {
        case (let chain?, let key?): tls.clientCertificate = .files(chain: chain, privateKey: key)
        case (nil, nil): break
        default: throw ConvertBenchUsage("--redis-cert and --redis-key go together")
        }
        return try RedisTLSTransport(tls)
    },
    referenceArguments: { options in
        var arguments = ["--tls"]
        if let ca = options["redis-ca"] { arguments += ["--cacert", ca] }
        if let chain = options["redis-cert"], let key = options["redis-key"] { arguments += ["--cert", chain, "--key", key] }
        if let name = options["redis-server-name"] { arguments += ["--sni", name] }
        return arguments
    })

/// A command line that cannot be run as given.
struct ConvertBenchUsage: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

exit(await ConvertBench.main(CommandLine.arguments, tool: "convert-redis-bench", redis: access))
