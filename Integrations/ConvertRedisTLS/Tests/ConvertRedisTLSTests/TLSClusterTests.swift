import ConvertMemory
import ConvertRedis
import ConvertRedisTLS
import ConvertSharedStore
import ConvertStorage
import Foundation
import Testing

/// Why the cluster test cannot run here, if it cannot.
private let missingClusterTools: String? = {
    if let missing = missingTools { return missing }
    guard executable("redis-cli") == nil else { return nil }
    let reason = "redis-cli not found (Debian's redis-tools): the TLS cluster test is skipped"
    print("ConvertRedisTLSTests: \(reason)")
    return reason
}()

/// Six TLS `redis-server`s of the test's own made into a cluster of three masters with a replica
/// each, the cluster bus and replication over TLS too.
private final class TLSCluster: Sendable {
    let certificates: Certificates
    let servers: [TLSRedisServer]

    init() throws {
        certificates = try Certificates()
        var servers: [TLSRedisServer] = []
        for _ in 0..<6 {
            servers.append(try TLSRedisServer(certificates: certificates, options: [
                "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "1000",
                "--tls-cluster", "yes", "--tls-replication", "yes", "--cluster-port", "\(try freeLoopbackPort())",
            ]))
        }
        self.servers = servers
        let created = try cli(["--cluster", "create"] + servers.map { "127.0.0.1:\($0.tlsPort)" }
            + ["--cluster-replicas", "1", "--cluster-yes"])
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let states = try servers.map { try cli(["-p", "\($0.tlsPort)", "cluster", "info"]) }
            if states.allSatisfy({ $0.contains("cluster_state:ok") }) { return }
            usleep(100_000)
        }
        throw TestError("the TLS cluster did not reach cluster_state:ok: \(created)")
    }

    /// `redis-cli` over TLS, trusting the test's CA.
    func cli(_ arguments: [String]) throws -> String {
        guard let path = executable("redis-cli") else { throw TestError("redis-cli is not installed") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["--tls", "--cacert", certificates.path("ca.crt"), "-h", "127.0.0.1"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    /// A cluster client over TLS seeded with every node.
    func client(keyPrefix: String) throws -> RedisClusterClient {
        let seeds = servers.map { server -> RedisConfiguration in
            var configuration = RedisConfiguration(port: server.tlsPort, keyPrefix: keyPrefix)
            configuration.tls = true
            return configuration
        }
        return RedisClusterClient(seeds: seeds, transport: try RedisTLSTransport(RedisTLSConfiguration(caFile: certificates.path("ca.crt"))))
    }
}

@Suite(.enabled(if: missingClusterTools == nil, "\(missingClusterTools ?? "")"), .serialized)
struct TLSClusterTests {
    /// Two instances on one TLS cluster, each visitor's first request on A, its second on B right
    /// after, B's own decision another variation: B answers A's, and only A's claim is first.
    @Test func twoInstancesOnATLSClusterAgreeWithNoGap() async throws {
        let cluster = try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try TLSCluster() }) }.start()
        }
        let a = try cluster.client(keyPrefix: "tls-cluster:"), b = try cluster.client(keyPrefix: "tls-cluster:")
        defer {
            a.close()
            b.close()
        }
        let storeA = WriteBehindVisitorStore(backend: RedisVisitorBackend(cluster: a), local: MemoryVisitorDataStore())
        let storeB = WriteBehindVisitorStore(backend: RedisVisitorBackend(cluster: b), local: MemoryVisitorDataStore())
        var bucketedTwice = 0, shownTwo = 0, unanswered = 0
        for n in 0..<1_000 {
            let key = VisitorKey(namespace: "10035569-10034190", visitorId: "tls-visitor-\(n)")
            guard let first = storeA.claimFirstDecision(key, experienceId: "100334665", variationId: "a"),
                  let second = storeB.claimFirstDecision(key, experienceId: "100334665", variationId: "b") else {
                unanswered += 1
                continue
            }
            if first.isFirst && second.isFirst { bucketedTwice += 1 }
            if first.variationId != second.variationId { shownTwo += 1 }
        }
        print("TLSClusterTests: 1,000 visitors on 3 TLS masters: \(bucketedTwice) bucketed twice, \(shownTwo) shown two variations, "
            + "\(unanswered) claims unanswered")
        #expect(unanswered == 0)
        #expect(bucketedTwice == 0)
        #expect(shownTwo == 0)
        let mastersHolding = try cluster.servers.filter { server in
            try cluster.cli(["-p", "\(server.tlsPort)", "info", "replication"]).contains("role:master")
                && (Int(try cluster.cli(["-p", "\(server.tlsPort)", "dbsize"]).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 0
        }
        #expect(mastersHolding.count == 3, "every master holds some of the visitors")
        #expect(storeA.counters.claims == 1_000 && storeB.counters.claimsLost == 1_000, "A: \(storeA.counters), B: \(storeB.counters)")
    }
}
