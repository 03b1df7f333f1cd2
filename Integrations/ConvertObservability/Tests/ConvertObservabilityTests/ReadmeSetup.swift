import ConvertLogging
import ConvertMetrics
import ConvertServiceLifecycle
import ConvertSwiftSDK
import ConvertTracing
import Logging
import ServiceLifecycle
import UnixSignals  // .sigterm's module, which MemberImportVisibility asks for

/// The README's set-up lines, kept compiling (not run: they fetch a config and wait for SIGTERM).
/// `otel`, `httpServer` and `redis` stand for the app's own.
func readmeSetup(sdkKey: String, otel: some Service, httpServer: some Service, redis: ReadmeRedis) async throws {
    // Logging
    var logger = Logger(label: "convert")
    logger.logLevel = .info   // the one level to set: the SDK builds exactly the lines the logger keeps
    let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: sdkKey), logger: logger)

    // Metrics
    sdk.addHook(MetricsHook())                // evaluations, exposures, conversions, as they happen
    let reporter = MetricsReporter(sdk: sdk)  // delivery and config status, every 10 s

    // Tracing
    sdk.addHook(TracingHook())   // an event on the request's span for each evaluation

    // Service lifecycle
    let convert = ConvertService(sdk: sdk, logger: logger,              // waits ≤ 10 s for a config
                                 whileRunning: [reporter.run],          // optional: the metrics reporter
                                 closers: [{ redis.close() }])          // optional: run after the SDK's shutdown
    let group = ServiceGroup(services: [otel, convert, httpServer],     // shutdown runs in reverse order
                             gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
    try await group.run()

    // With the parts a server swaps in, and by parts.
    _ = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: sdkKey), logger: logger, directData: ConvertSwiftSDK.sampleConfig,
                        transport: nil, visitorStore: nil)
    _ = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: sdkKey).logging(to: logger), logSink: SwiftLogSink(logger))
}

/// Stands for ConvertRedis's `RedisClient`, whose `close()` is synchronous.
struct ReadmeRedis: Sendable {
    func close() {}
}
