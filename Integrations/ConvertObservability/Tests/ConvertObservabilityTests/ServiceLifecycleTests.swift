import ConvertLogging
import ConvertServiceLifecycle
import ConvertSwiftSDK
import ConvertTesting
import ConvertTransport
import Foundation
import InMemoryLogging
import Logging
import ServiceLifecycle
import ServiceLifecycleTestKit
import Testing

@Suite struct ServiceLifecycleTests {
    /// A logger that writes nothing.
    static let quiet = Logger(label: "convert", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Counts closer calls.
    final class Closed: Sendable {
        private let count = Protected(0)
        func close() { count.withValue { $0 += 1 } }
        var value: Int { count.withValue { $0 } }
    }

    /// An SDK from the sample config whose tracking queue holds events until shutdown (a batch of
    /// 1,000, an hour between releases) and delivers them to a stub answering 200.
    static func holdingSDK() -> (ConvertSwiftSDK, StubTransport) {
        let transport = StubTransport { _ in HTTPResponse(status: 200) }
        let configuration = ConvertConfiguration(sdkKey: "10035569/10034190", eventsBatchSize: 1000,
                                                 eventsReleaseIntervalMs: 3_600_000, persistence: .memory)
        let sdk = ConvertSwiftSDK(configuration: configuration, ports: .live(
            configuration, logSink: SilentLogSink(), directData: ConvertSwiftSDK.sampleConfig, transport: transport))
        return (sdk, transport)
    }

    /// Decides the README's experience for `count` visitors: one bucketing event each.
    static func decide(_ sdk: ConvertSwiftSDK, visitors count: Int) {
        for index in 0..<count {
            let context = sdk.createContext(visitorId: "visitor-\(index)", attributes: ["desktop": true, "browser": "FF"])
            context.setLocationProperties(["location": "pricing"])
            _ = context.variation(forExperience: "test-experience-ab-fullstack-1")
        }
    }

    @Test func gracefulShutdownOfTheGroupDeliversPendingEventsThenRunsTheClosers() async throws {
        let (sdk, transport) = Self.holdingSDK()
        let closed = Closed()
        let service = ConvertService(sdk: sdk, logger: Self.quiet, shutdownTimeout: .seconds(30),
                                     closers: [{ closed.close() }])
        let group = ServiceGroup(services: [service], logger: Self.quiet)
        let running = Task { try await group.run() }

        try await sdk.ready(timeout: .seconds(30))
        Self.decide(sdk, visitors: 5)
        let before = sdk.trackingCounters
        #expect(before.enqueued == 5)
        #expect(before.pending == 5)
        #expect(transport.requests.isEmpty)
        #expect(closed.value == 0)

        await group.triggerGracefulShutdown()
        try await running.value

        let after = sdk.trackingCounters
        #expect(after.sent == 5)
        #expect(after.pending == 0)
        let bodies = transport.requests.compactMap { $0.body.map { String(decoding: $0, as: UTF8.self) } }
        #expect(bodies.count == 1)
        #expect(bodies.first?.components(separatedBy: "\"bucketing\"").count == 6)
        #expect(closed.value == 1)
        // Shut down: tracking takes nothing more.
        Self.decide(sdk, visitors: 7)
        #expect(sdk.trackingCounters.dropped >= 1)
    }

    @Test func shutdownRequestedBeforeRunSkipsTheReadinessWait() async throws {
        // No config ever comes: a service waiting for readiness would wait the whole hour.
        let harness = TestSDK(data: nil)
        let closed = Closed()
        let service = ConvertService(sdk: harness.sdk, logger: Self.quiet, readinessTimeout: .seconds(3600), closers: [{ closed.close() }])
        let clock = ContinuousClock()
        let started = clock.now
        try await testGracefulShutdown { trigger in
            trigger.triggerGracefulShutdown()
            try await service.run()
        }
        #expect(clock.now - started < .seconds(60))
        #expect(harness.sink.flushCount == 1)
        #expect(closed.value == 1)
    }

    @Test func cancellationWhileWaitingForReadinessShutsDownAndCloses() async throws {
        let harness = TestSDK(data: nil)
        let closed = Closed()
        let service = ConvertService(sdk: harness.sdk, logger: Self.quiet, readinessTimeout: .seconds(3600), closers: [{ closed.close() }])
        let clock = ContinuousClock()
        let started = clock.now
        let running = Task { try await service.run() }
        try await Task.sleep(for: .milliseconds(50))
        running.cancel()
        try await running.value
        #expect(clock.now - started < .seconds(60))
        #expect(harness.sink.flushCount == 1)
        #expect(closed.value == 1)
    }

    @Test func cancellationWhileRunningStillDeliversPendingEvents() async throws {
        let (sdk, transport) = Self.holdingSDK()
        let closed = Closed()
        let service = ConvertService(sdk: sdk, logger: Self.quiet, shutdownTimeout: .seconds(30), closers: [{ closed.close() }])
        let running = Task { try await service.run() }
        try await sdk.ready(timeout: .seconds(30))
        Self.decide(sdk, visitors: 3)
        #expect(sdk.trackingCounters.pending == 3)

        running.cancel()
        try await running.value
        #expect(sdk.trackingCounters.sent == 3)
        #expect(transport.requests.count == 1)
        #expect(closed.value == 1)
    }

    @Test func notReadyInTimeIsLoggedWithItsCauseAndTheServiceKeepsRunning() async throws {
        let harness = TestSDK(data: nil)
        let handler = InMemoryLogHandler()
        let logger = Logger(label: "convert", factory: { _ in handler })
        let whileRunning = Closed()
        let service = ConvertService(sdk: harness.sdk, logger: logger, readinessTimeout: .milliseconds(20),
                                     whileRunning: [{ whileRunning.close() }])
        try await testGracefulShutdown { trigger in
            let running = Task { try await service.run() }
            // Still running after the readiness bound: the SDK keeps trying on its own.
            while handler.entries.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
            try await Task.sleep(for: .milliseconds(50))
            #expect(harness.sink.flushCount == 0)
            trigger.triggerGracefulShutdown()
            try await running.value
        }
        let warning = try #require(handler.entries.first { $0.level == .warning })
        #expect(warning.message.description.contains("not ready within"))
        #expect(warning.metadata["convert.cause"] == "no config received yet")
        #expect(whileRunning.value == 1)
        // The report is the SDK's own line, in the SDK's log.
        #expect(!handler.entries.contains { $0.message.description.contains("shut down") })
        #expect(harness.logs.contains("shut down"))
    }

    @Test func theShutdownReportIsLoggedOnceWhenTheSDKAndTheServiceShareALogger() async throws {
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "convert", factory: { _ in handler })
        logger.logLevel = .info
        let transport = StubTransport { _ in HTTPResponse(status: 200) }
        let configuration = ConvertConfiguration(sdkKey: "10035569/10034190", persistence: .memory).logging(to: logger)
        let sdk = ConvertSwiftSDK(configuration: configuration, ports: .live(
            configuration, logSink: SwiftLogSink(logger), directData: ConvertSwiftSDK.sampleConfig, transport: transport))
        let service = ConvertService(sdk: sdk, logger: logger)
        try await testGracefulShutdown { trigger in
            let running = Task { try await service.run() }
            try await sdk.ready(timeout: .seconds(30))
            Self.decide(sdk, visitors: 3)
            trigger.triggerGracefulShutdown()
            try await running.value
        }
        #expect(sdk.trackingCounters.sent == 3)
        let reports = handler.entries.filter { $0.message.description.contains("shut down") }
        #expect(reports.count == 1, "\(reports.map(\.message))")
    }

    @Test func theServiceDescribesItselfBrieflyInTheGroupsLog() async throws {
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "convert", factory: { _ in handler })
        logger.logLevel = .debug
        let harness = TestSDK(data: ConvertSwiftSDK.sampleConfig)
        let service = ConvertService(sdk: harness.sdk, logger: Self.quiet, shutdownTimeout: .seconds(3),
                                     whileRunning: [{}], closers: [{}])
        let described = "ConvertService(readinessTimeout: 10.0 seconds, shutdownTimeout: 3.0 seconds)"
        #expect("\(service)" == described)
        #expect(String(reflecting: service) == described)
        #expect(Mirror(reflecting: service).children.map(\.label) == ["readinessTimeout", "shutdownTimeout"])

        let group = ServiceGroup(services: [service], logger: logger)
        let running = Task { try await group.run() }
        try await harness.sdk.ready(timeout: .seconds(30))
        await group.triggerGracefulShutdown()
        try await running.value
        let named = Set(handler.entries.compactMap { $0.metadata["sl-service"]?.description })
        #expect(named == [described])
    }

    @Test func aFailingCloserIsLoggedAndTheNextOneRuns() async throws {
        struct Broken: Error {}
        let harness = TestSDK(data: ConvertSwiftSDK.sampleConfig)
        let handler = InMemoryLogHandler()
        let closed = Closed()
        let service = ConvertService(sdk: harness.sdk, logger: Logger(label: "convert", factory: { _ in handler }),
                                     closers: [{ throw Broken() }, { closed.close() }])
        try await testGracefulShutdown { trigger in
            trigger.triggerGracefulShutdown()
            try await service.run()
        }
        #expect(closed.value == 1)
        #expect(handler.entries.contains { $0.level == .error && $0.message.description.contains("closer 1 of 2 failed") })
    }
}

/// A value behind a lock, for test doubles.
final class Protected<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withValue<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
