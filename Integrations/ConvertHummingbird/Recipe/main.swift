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

let environment = ProcessInfo.processInfo.environment

// Logs: one logger, one level; the SDK builds only the lines this logger keeps.
var logger = Logger(label: "shop")
logger.logLevel = .info

// Metrics: Prometheus' format at GET /metrics. Traces: bootstrap your tracer here too
// (InstrumentationSystem.bootstrap, swift-otel); without one, the tracing hook costs nothing.
let prometheus = PrometheusCollectorRegistry()
MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: prometheus))

// The configuration, given once. With CONVERT_SDK_KEY the config comes from Convert's CDN and
// tracking goes to Convert; without it, the SDK's sample config and no tracking.
let sdkKey = environment["CONVERT_SDK_KEY"]
let configuration = ConvertConfiguration(sdkKey: sdkKey ?? "", networkTracking: sdkKey != nil)

// Config fetches and tracking over AsyncHTTPClient, on the server's event loops; shut down after
// the SDK. With REDIS_URL, visitor data is shared with the other servers through Redis.
let transport = AsyncHTTPClientTransport(postAnswerDeadline: .milliseconds(configuration.trackingAnswerTimeoutMs))
var closers: [@Sendable () async throws -> Void] = [{ try await transport.shutdown() }]
var visitorStore: (any VisitorDataStore)?
if let redisURL = environment["REDIS_URL"] {   // redis://[user:password@]host[:port][/db]
    var redisConfiguration = try RedisConfiguration(url: redisURL)
    redisConfiguration.keyPrefix = "convert:"
    redisConfiguration.ttl = .seconds(90 * 86_400)
    let redis = RedisClient(configuration: redisConfiguration)
    visitorStore = WriteBehindVisitorStore(backend: RedisVisitorBackend(client: redis), local: MemoryVisitorDataStore())
    closers.append { redis.close() }
}

let sdk = ConvertSwiftSDK(configuration: configuration, logger: logger,
                          directData: sdkKey == nil ? ConvertSwiftSDK.sampleConfig : nil,
                          transport: transport, visitorStore: visitorStore)
sdk.addHook(MetricsHook())                // evaluations, exposures, conversions
sdk.addHook(TracingHook())                // an event on the request's span, when it records
let reporter = MetricsReporter(sdk: sdk)  // delivery and config status

let router = Router(context: BasicConvertRequestContext.self)
router.add(middleware: TracingMiddleware())
// The visitor's cookie and attributes on the shop's routes only. Plain HTTP on localhost: not
// `Secure` (behind HTTPS keep `VisitorCookie()`).
let shop = router.group().add(middleware: ConvertMiddleware(sdk: sdk, cookie: VisitorCookie(secure: false)) { request in
    let agent = request.headers[.userAgent] ?? ""
    let mobile = agent.contains("Mobile")
    return ["mobile": .bool(mobile), "desktop": .bool(!mobile), "browser": .string(agent.contains("Chrome") ? "CH" : "other")]
})
shop.get("/") { _, context -> String in
    let convert = try context.requireConvert()
    convert.setLocationProperties(["location": "pricing"])
    let variation = convert.variation(forExperience: "test-experience-ab-fullstack-1")?.keyOrId ?? "none"
    let features = convert.features().filter(\.isEnabled).map(\.key)
    return "variation: \(variation)\nfeatures: \(features.joined(separator: ", "))\n"
}
shop.post("/buy") { _, context -> String in
    "\(try await context.requireConvert().trackConversion("button-primary-click"))\n"
}
router.get("/metrics") { _, _ -> String in
    reporter.report()   // delivery as of now, not as of the reporter's last round
    return prometheus.emitToString()
}

// Services start in order, the HTTP server last, and stop in reverse at SIGTERM or SIGINT: the
// server stops taking requests, then the SDK delivers its pending events (the reporter's last
// round sees it), then the closers run. An OpenTelemetry service goes before `convert`.
let convert = ConvertService(sdk: sdk, logger: logger, whileRunning: [reporter.run], closers: closers)
let app = Application(router: router,
                      configuration: .init(address: .hostname("127.0.0.1", port: Int(environment["PORT"] ?? "") ?? 8080)),
                      services: [convert], logger: logger)
try await app.runService()
