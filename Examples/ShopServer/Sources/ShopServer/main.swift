// A Hummingbird shop deciding with the Convert SDK for the visitor in its cookie:
//
//   GET /       the experience's variation and the enabled features for the visitor
//   GET /plain  the same cookie work without the SDK (the baseline for load.sh)
//   POST /buy   tracks the goal "button-primary-click": answers "tracked", "duplicate", …
//   GET /metrics the SDK's metrics (and the others) in Prometheus' text format
//
// Tracking goes to the local collector (`swift run -c release collector`). At SIGTERM or SIGINT
// the HTTP server stops first, then the SDK delivers its pending events, then the answers of
// POST /buy are logged ("answered tracked N, …") to compare with the collector's count.
import ConvertAsyncHTTPClient
import ConvertHummingbird
import ConvertLogging
import ConvertMemory
import ConvertMetrics
import ConvertRedis
import ConvertServiceLifecycle
import ConvertSharedStore
import ConvertSwiftSDK
import ConvertTracing
import Foundation
import Hummingbird
import Logging
import Metrics
import Prometheus
import ServiceLifecycle
import UnixSignals

let options: Options
do {
    options = try Options(Array(CommandLine.arguments.dropFirst()))
} catch {
    print(error)
    exit(2)
}

var logger = Logger(label: "shop")
logger.logLevel = options.verbose ? .debug : .info

// The SDK: config from a file or the sample, tracking to the collector over plain HTTP through
// AsyncHTTPClient on the server's event loops (closed after the SDK's last flush). Memory
// persistence unless `--data-dir` is given: events still pending after the shutdown deadline are
// lost; with files they are journaled and sent at the next start, after a crash too.
let configData = try options.configFile.map { try Data(contentsOf: URL(fileURLWithPath: $0)) } ?? ConvertSwiftSDK.sampleConfig
var configuration = ConvertConfiguration(sdkKey: "", apiTrackEndpoint: options.collector, networkTracking: options.tracking,
                                         persistence: options.dataDirectory == nil ? .memory : .file,
                                         storageDirectory: options.dataDirectory.map { URL(fileURLWithPath: $0, isDirectory: true) },
                                         allowsInsecureHTTP: true)
if let batchSize = options.batchSize { configuration.eventsBatchSize = batchSize }
var closers: [@Sendable () async throws -> Void] = []
let transport = options.urlSession ? nil
    : AsyncHTTPClientTransport(postAnswerDeadline: .milliseconds(configuration.trackingAnswerTimeoutMs))
if let transport { closers.append { try await transport.shutdown() } }
var visitorStore: (any VisitorDataStore)?
/// A Redis node on the Redis host: the shop's keys, kept 90 days.
func redisConfiguration(port: Int) -> RedisConfiguration {
    RedisConfiguration(host: options.redisHost, port: port, keyPrefix: "shop:", ttl: .seconds(90 * 86_400))
}
if let redisPort = options.redisPort {
    // Visitor data shared with the other servers through Redis, written behind.
    let redis = RedisClient(configuration: redisConfiguration(port: redisPort))
    visitorStore = WriteBehindVisitorStore(backend: RedisVisitorBackend(client: redis), local: MemoryVisitorDataStore())
    closers.append { redis.close() }
    logger.info("visitor data shared through Redis at \(options.redisHost):\(redisPort)")
} else if !options.redisClusterPorts.isEmpty {
    // The same through a Redis Cluster: each visitor's keys go to its slot's master.
    let cluster = RedisClusterClient(seeds: options.redisClusterPorts.map(redisConfiguration(port:)))
    visitorStore = WriteBehindVisitorStore(backend: RedisVisitorBackend(cluster: cluster), local: MemoryVisitorDataStore())
    closers.append { cluster.close() }
    logger.info("visitor data shared through the Redis Cluster seeded by \(options.redisHost):\(options.redisClusterPorts)")
}
// The configuration given once; its log level is the logger's.
let sdk = ConvertSwiftSDK(configuration: configuration, logger: logger, directData: configData, transport: transport,
                          visitorStore: visitorStore)

// Metrics in Prometheus' format at GET /metrics; each evaluation also recorded on the request's
// span (TracingMiddleware's) when a tracer is bootstrapped. None is here, as in README's recipe:
// the spans record nothing, and the hook returns before building anything.
let prometheus = PrometheusCollectorRegistry()
MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: prometheus))
if options.observability {
    sdk.addHook(MetricsHook())
    sdk.addHook(TracingHook())
}
let reporter = MetricsReporter(sdk: sdk)

// The visitor id cookie. Plain HTTP on localhost: not `Secure`, and no `Domain` (browsers refuse
// Domain=localhost). Behind HTTPS keep the default, `VisitorCookie()`.
let cookie = VisitorCookie(secure: false)
let answers = Answers()

let router = Router(context: BasicConvertRequestContext.self)
if options.observability { router.add(middleware: TracingMiddleware()) }
let shop = router.group().add(middleware: ConvertMiddleware(sdk: sdk, cookie: cookie) { request in
    let agent = request.headers[.userAgent] ?? ""
    let mobile = agent.mentions("Mobile")
    let browser = agent.mentions("Firefox") ? "FF" : agent.mentions("Chrome") ? "CH" : "other"
    return ["desktop": .bool(!mobile), "mobile": .bool(mobile), "browser": .string(browser)]
})

shop.get("/") { _, context -> Response in
    let convert = try context.requireConvert()
    convert.setLocationProperties(["location": "pricing"])
    let variation = convert.variation(forExperience: "test-experience-ab-fullstack-1")?.keyOrId ?? "none"
    let features = convert.features().filter(\.isEnabled).map(\.key)
    return .text("test-experience-ab-fullstack-1: \(variation)\nfeatures: \(features.joined(separator: ", "))\n")
}

shop.post("/buy") { _, context -> String in
    answers.answer(try await context.requireConvert().trackConversion("button-primary-click")) + "\n"
}

// The baseline: the same cookie work, no SDK.
router.get("/plain") { request, _ -> Response in
    let known = cookie.visitorId(fromCookieHeader: request.headers[.cookie])
    let visitorId = known ?? VisitorCookie.newVisitorId()
    var response = Response.text("visitor: \(visitorId)\n")
    if known == nil { response.headers[values: .setCookie].append(try cookie.makeSetCookieHeader(for: visitorId)) }
    return response
}

router.get("/metrics") { _, _ -> Response in
    reporter.report()   // delivery as of now, not as of the reporter's last round
    return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
             body: ResponseBody(byteBuffer: ByteBuffer(bytes: prometheus.emitToBuffer())))
}

let app = Application(router: router, configuration: .init(address: .hostname(options.hostname, port: options.port)),
                      logger: logger)

// Started in this order, shut down in the reverse: the HTTP server stops taking requests first,
// then the SDK delivers what they tracked.
let convert = ConvertService(sdk: sdk, logger: logger, shutdownTimeout: .seconds(options.shutdownTimeout),
                             whileRunning: [reporter.run], closers: closers)
let group = ServiceGroup(configuration: .init(
    services: [
        LoggedService(name: "Convert SDK service", base: convert, logger: logger),
        LoggedService(name: "HTTP server", base: app, logger: logger),
    ],
    gracefulShutdownSignals: [.sigterm, .sigint],
    logger: logger))
try await group.run()
logger.info("answered \(answers.summary)")
