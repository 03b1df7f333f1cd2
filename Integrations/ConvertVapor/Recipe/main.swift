import ConvertAsyncHTTPClient
import ConvertLogging
import ConvertMemory
import ConvertMetrics
import ConvertRedis
import ConvertSharedStore
import ConvertSwiftSDK
import ConvertTracing
import ConvertVapor
import Logging
import Metrics
import Prometheus
import Vapor

var environment = try Environment.detect()
try LoggingSystem.bootstrap(from: &environment)   // the level: --log or LOG_LEVEL, info by default
let app = try await Application.make(environment)

// Metrics: Prometheus' format at GET /metrics. Traces: bootstrap your tracer here too
// (InstrumentationSystem.bootstrap, swift-otel); without one, the tracing hook costs nothing.
let prometheus = PrometheusCollectorRegistry()
MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: prometheus))

// The configuration, given once. With CONVERT_SDK_KEY the config comes from Convert's CDN and
// tracking goes to Convert; without it, the SDK's sample config and no tracking.
let sdkKey = Environment.get("CONVERT_SDK_KEY")
let configuration = ConvertConfiguration(sdkKey: sdkKey ?? "", networkTracking: sdkKey != nil)

// Config fetches and tracking over AsyncHTTPClient, on the app's event loops; shut down after the
// SDK. With REDIS_URL, visitor data is shared with the other servers through Redis.
let transport = AsyncHTTPClientTransport(eventLoopGroup: app.eventLoopGroup,
                                         postAnswerDeadline: .milliseconds(configuration.trackingAnswerTimeoutMs))
var closers: [@Sendable () async throws -> Void] = [{ try await transport.shutdown() }]
var visitorStore: (any VisitorDataStore)?
if let redisURL = Environment.get("REDIS_URL") {   // redis://[user:password@]host[:port][/db]
    var redisConfiguration = try RedisConfiguration(url: redisURL)
    redisConfiguration.keyPrefix = "convert:"
    redisConfiguration.ttl = .seconds(90 * 86_400)
    let redis = RedisClient(configuration: redisConfiguration)
    visitorStore = WriteBehindVisitorStore(backend: RedisVisitorBackend(client: redis), local: MemoryVisitorDataStore())
    closers.append { redis.close() }
}

let sdk = ConvertSwiftSDK(configuration: configuration, logger: app.logger,
                          directData: sdkKey == nil ? ConvertSwiftSDK.sampleConfig : nil,
                          transport: transport, visitorStore: visitorStore)
sdk.addHook(MetricsHook())                // evaluations, exposures, conversions
sdk.addHook(TracingHook())                // an event on the request's span, when it records
let reporter = MetricsReporter(sdk: sdk)  // delivery and config status

// In the app's lifecycle: the reporter runs from boot; at shutdown the server stops, the SDK
// delivers its pending events (the reporter's last round sees it), then the closers run.
app.convert.use(sdk, shutdownTimeout: .seconds(5), whileRunning: [reporter.run], closers: closers)

app.middleware.use(TracingMiddleware(), at: .beginning)   // a span per request
// The visitor's cookie and attributes on the shop's routes only. Plain HTTP on localhost: not
// `Secure` (behind HTTPS keep `VisitorCookie()`).
let shop = app.grouped(app.convert.middleware(cookie: VisitorCookie(secure: false)) { req in
    let agent = req.headers.first(name: .userAgent) ?? ""
    let mobile = agent.contains("Mobile")
    return ["mobile": .bool(mobile), "desktop": .bool(!mobile), "browser": .string(agent.contains("Chrome") ? "CH" : "other")]
})
shop.get { req -> String in
    let convert = try req.convert
    convert.setLocationProperties(["location": "pricing"])
    let variation = convert.variation(forExperience: "test-experience-ab-fullstack-1")?.keyOrId ?? "none"
    let features = convert.features().filter(\.isEnabled).map(\.key)
    return "variation: \(variation)\nfeatures: \(features.joined(separator: ", "))\n"
}
shop.post("buy") { req async throws -> String in
    "\(try await req.convert.trackConversion("button-primary-click"))\n"
}
app.get("metrics") { _ -> String in
    reporter.report()   // delivery as of now, not as of the reporter's last round
    return prometheus.emitToString()
}

try await app.execute()   // `serve --hostname 127.0.0.1 --port 8080` by default; SIGTERM or SIGINT stops it
try await app.asyncShutdown()
