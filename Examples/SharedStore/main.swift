// Two SDK instances ("two servers behind a load balancer") sharing visitor data through one
// Redis server: a visitor's first decision is claimed in Redis before it is answered, so the
// other server answers the same even with another traffic split; a sticky decision survives a
// traffic change made on the other server; a goal converted on both at the same moment is sent
// once.
//
//   redis-server --port 6379 --save "" &
//   swift run shared-store [--host 127.0.0.1] [--port 6379] [--visitors 1000]
import ConvertRedis
import ConvertSharedStore
import ConvertSwiftSDK
import ConvertMemory
import ConvertTesting
import ConvertTransport
import Foundation

let usage = "usage: shared-store [--host HOST] [--port PORT] [--visitors N] [--help] [--version]"
var options: [String: String] = [:]
var arguments = Array(CommandLine.arguments.dropFirst())
while let argument = arguments.first {
    arguments.removeFirst()
    switch argument {
    case "--help":
        print(usage)
        print("Needs a Redis (or Valkey) server; the example writes keys under \"convert-example:<run id>:\" and removes them at the end.")
        exit(0)
    case "--version":
        print("shared-store \(ConvertAgent.version)")
        exit(0)
    case "--host", "--port", "--visitors":
        guard let value = arguments.first else {
            FileHandle.standardError.write(Data("shared-store: \(argument) needs a value\n".utf8))
            exit(2)
        }
        arguments.removeFirst()
        options[String(argument.dropFirst(2))] = value
    default:
        FileHandle.standardError.write(Data("shared-store: unknown option \(argument)\n\(usage)\n".utf8))
        exit(2)
    }
}
let host = options["host"] ?? "127.0.0.1"
guard let port = Int(options["port"] ?? "6379"), let visitorCount = Int(options["visitors"] ?? "1000"), visitorCount > 0 else {
    FileHandle.standardError.write(Data("shared-store: --port and --visitors take numbers\n".utf8))
    exit(2)
}

/// Runs the example; the exit status says whether the shared store kept its promises.
func run(host: String, port: Int, visitorCount: Int) async throws -> Int32 {
    let prefix = "convert-example:\(UUID().uuidString.prefix(8)):"
    let redis = RedisClient(configuration: RedisConfiguration(host: host, port: port, keyPrefix: prefix, ttl: .seconds(3600),
                                                              connectTimeout: .seconds(2), commandTimeout: .seconds(2)))
    do {
        try await redis.ping()
    } catch {
        FileHandle.standardError.write(Data("""
            shared-store: no Redis server at \(host):\(port) (\(error)).
            Start one with: redis-server --port \(port) --save ""

            """.utf8))
        return 1
    }

    /// One server: an SDK whose visitor data is shared through Redis.
    func server(_ weights: [Double]) async throws -> (ConvertSwiftSDK, WriteBehindVisitorStore, RecordingTrackingSink) {
        let store = WriteBehindVisitorStore(backend: RedisVisitorBackend(client: redis), local: MemoryVisitorDataStore())
        let sink = RecordingTrackingSink()
        let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "example", persistence: .memory), ports: ConvertPorts(
            configSource: DirectConfigSource(bytes: try Fixtures.baselineReallocated(weights)), visitorStore: store,
            visitorIdStore: MemoryVisitorIdStore(), trackingSink: sink))
        try await sdk.ready(timeout: .seconds(5))
        return (sdk, store, sink)
    }

    let experience = "test-experience-ab-fullstack-1"
    let visitors = (0..<visitorCount).map { "visitor-\($0)" }
    let attributes: [String: JSONValue] = ["desktop": true, "browser": "FF"]

    // Server A runs the experience at 50/50.
    let (a, storeA, sinkA) = try await server([50, 50])
    var first: [String: String] = [:]
    for visitor in visitors {
        let context = await a.loadContext(visitorId: visitor, attributes: attributes)
        context.setLocationProperties(["location": "pricing"])
        first[visitor] = context.variation(forExperience: experience)?.key ?? "none"
    }
    _ = await storeA.flush()
    print("server A (50/50): \(Dictionary(grouping: first.values, by: { $0 }).mapValues(\.count).sorted { $0.key < $1.key })")

    // Server B got the new allocation, 100/0: returning visitors keep what server A gave them.
    let (b, storeB, sinkB) = try await server([100, 0])
    var kept = 0, wouldFlip = 0
    for visitor in visitors {
        let context = await b.loadContext(visitorId: visitor, attributes: attributes)
        context.setLocationProperties(["location": "pricing"])
        if context.variation(forExperience: experience)?.key == first[visitor] { kept += 1 }
        let newcomer = b.createContext(visitorId: visitor + "-newcomer", attributes: attributes)
        newcomer.setLocationProperties(["location": "pricing"])
        if newcomer.variation(forExperience: experience, enableTracking: false)?.key != first[visitor] { wouldFlip += 1 }
    }
    print("server B (100/0): \(kept) of \(visitors.count) returning visitors kept their variation "
        + "(\(wouldFlip) would have flipped without the shared store)")

    // Both servers track the same goal for every visitor at the same moment.
    let results = await withTaskGroup(of: ConversionResult.self) { group in
        for visitor in visitors {
            for sdk in [a, b] {
                group.addTask { await sdk.createContext(visitorId: visitor).trackConversion("button-primary-click") }
            }
        }
        return await group.reduce(into: [ConversionResult]()) { $0.append($1) }
    }
    let conversions = (sinkA.events + sinkB.events).filter { $0.eventType == "conversion" }.count
    print("goal tracked \(results.count) times on two servers: \(conversions) conversions sent "
        + "(\(results.filter { $0 == .duplicate }.count) duplicates suppressed)")
    // Shutting down writes what is pending to Redis: "pending" then counts writes not yet made.
    _ = await a.shutdown(timeout: .seconds(5))
    _ = await b.shutdown(timeout: .seconds(5))
    print("server A store: \(storeA.counters)")
    print("server B store: \(storeB.counters)")

    // Every key this run wrote is under its own prefix: remove them all, and say so. `eval` is
    // package-level (this example is in the SDK's package): an app's keys expire with `ttl`.
    let removal = """
        local keys = redis.call('KEYS', ARGV[1] .. '*')
        for i = 1, #keys, 500 do redis.call('DEL', unpack(keys, i, math.min(i + 499, #keys))) end
        return #keys
        """
    let removed = (try? await redis.eval(removal, args: [.string(prefix)])).flatMap { reply -> Int64? in
        if case .integer(let count) = reply { return count }
        return nil
    }
    // The Redis client is closed last, after the SDKs that write through it.
    redis.close()
    if let removed {
        print("removed the \(removed) keys this run wrote under \(prefix)")
    } else {
        FileHandle.standardError.write(Data("shared-store: could not remove the keys under \(prefix)\n".utf8))
    }
    return kept == visitors.count && conversions == visitors.count && removed != nil ? 0 : 1
}

exit(try await run(host: host, port: port, visitorCount: visitorCount))
