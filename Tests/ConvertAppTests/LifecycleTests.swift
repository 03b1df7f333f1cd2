import ConvertAppLifecycle
import ConvertAppleAdapters
import ConvertFileStorage
import ConvertMemory
import ConvertQueue
import ConvertSwiftSDK
import ConvertSynchronization
import ConvertTesting
import ConvertTransport
import Foundation
import Testing

private let endpoint = TrackingEndpoint(template: "https://[project_id].metrics.example.com/v1", sdkKey: "key")

/// An SDK on a tracking queue that holds events for a minute unless flushed, over `transport`.
private func appSDK(transport: StubTransport, journal: (any EventJournal)? = nil, clock: ManualClock,
                    source: (any ConfigSource)? = nil) throws -> (ConvertSwiftSDK, TrackingQueue) {
    let queue = TrackingQueue(transport: transport, endpoint: endpoint,
                              options: TrackingQueueOptions(batchSize: 100, releaseInterval: .seconds(60)),
                              journal: journal, clock: clock)
    let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "key", dataRefreshIntervalMs: 300_000, persistence: .memory),
                              ports: ConvertPorts(configSource: try source ?? StubConfigSource(initial: Fixtures.data(.cdnConfigBaseline)),
                                                  visitorStore: MemoryVisitorDataStore(), visitorIdStore: MemoryVisitorIdStore(),
                                                  trackingSink: queue, sleepClock: clock))
    return (sdk, queue)
}

@Suite struct LifecycleTests {
    @Test func lifecycleSourceContractHoldsForTheFakeAndTheNotificationSource() throws {
        let fake = FakeAppLifecycle()
        try AppLifecycleSourceContract.verify(make: { fake }, post: fake.send)

        let center = NotificationCenter()
        let names = AppLifecycleEvent.allCases.map { (Notification.Name("test.\($0.rawValue)"), $0) }
        try AppLifecycleSourceContract.verify(make: { NotificationLifecycleSource(center: center, names: names) }) { event in
            center.post(name: Notification.Name("test.\(event.rawValue)"), object: nil)
        }
    }

    @Test func backgroundFlushesWithinTheDeadlineAndGivesTheTimeBack() async throws {
        let transport = StubTransport { _ in HTTPResponse(status: 200) }
        let clock = ManualClock()
        let (sdk, queue) = try appSDK(transport: transport, clock: clock)
        let app = FakeAppLifecycle()
        sdk.connectApp(lifecycle: app, options: AppOptions(backgroundFlushDeadline: .seconds(25)))
        for number in 0..<7 { queue.enqueue(goal(number)) }

        app.send(.didEnterBackground)
        // The clock never moves: the flush is done well before the 25 s deadline, not by it.
        await app.grantsEnded(1)
        #expect(goalIds(in: transport.requests).sorted() == (0..<7).map { "g\($0)" }.sorted())
        #expect(queue.counters.pending == 0)
        #expect(app.grantsBegun == 1 && app.endings == [1: 1])
    }

    @Test func aFlushThatCannotFinishEndsAtTheDeadlineAndKeepsItsEvents() async throws {
        let transport = StubTransport { _ in HTTPResponse(status: 503) }
        let clock = ManualClock()
        let journal = MemoryEventJournal()
        let (sdk, queue) = try appSDK(transport: transport, journal: journal, clock: clock)
        let app = FakeAppLifecycle()
        sdk.connectApp(lifecycle: app, options: AppOptions(backgroundFlushDeadline: .seconds(25)))
        for number in 0..<3 { queue.enqueue(goal(number)) }

        app.send(.didEnterBackground)
        try await clock.waitForSleepers(2)
        #expect(app.endings.isEmpty)
        clock.advance(by: .seconds(25))
        await app.grantsEnded(1)
        #expect(app.endings == [1: 1])
        #expect(try journal.pending().count == 3, "undelivered events stay journaled for the next launch")
        queue.stop()
    }

    @Test func theSystemTakingTheTimeBackEndsTheGrantOnce() async throws {
        let transport = StubTransport { _ in HTTPResponse(status: 503) }
        let clock = ManualClock()
        let (sdk, queue) = try appSDK(transport: transport, clock: clock)
        let app = FakeAppLifecycle()
        sdk.connectApp(lifecycle: app, options: AppOptions(backgroundFlushDeadline: .seconds(25)))
        queue.enqueue(goal(1))
        app.send(.didEnterBackground)
        app.expire()
        await app.grantsEnded(1)
        clock.advance(by: .seconds(30))
        app.send(.didEnterBackground)
        app.expire()
        await app.grantsEnded(2)
        #expect(app.endings == [1: 1, 2: 1])
        queue.stop()
    }

    @Test func returningRefreshesAConfigOlderThanTheRefreshInterval() async throws {
        let source = CountingRefreshSource(try Fixtures.data(.cdnConfigBaseline))
        let clock = ManualClock()
        let (sdk, queue) = try appSDK(transport: StubTransport { _ in HTTPResponse(status: 200) }, clock: clock, source: source)
        try await sdk.ready()
        let app = FakeAppLifecycle()
        sdk.connectApp(lifecycle: app)
        app.send(.willResignActive)
        app.send(.didEnterBackground)
        clock.advance(by: .seconds(60))
        app.send(.didBecomeActive)
        #expect(source.refreshes == 0, "a config a minute old is not refreshed (interval: 5 minutes)")
        clock.advance(by: .seconds(300))
        app.send(.didBecomeActive)
        await source.refreshed()
        #expect(source.refreshes == 1)
        queue.stop()
    }

    @Test func terminationLosesNothing() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = ManualClock()
        // The first launch's server never answers: the process ends with everything pending.
        let (sdk, queue) = try appSDK(transport: StubTransport { _ in throw TransportError.timedOut },
                                      journal: try FileEventJournal(directory: directory), clock: clock)
        let app = FakeAppLifecycle()
        sdk.connectApp(lifecycle: app)
        for number in 0..<12 { queue.enqueue(goal(number)) }
        app.send(.willTerminate)
        queue.stop()

        let delivered = StubTransport { _ in HTTPResponse(status: 200) }
        let relaunched = TrackingQueue(transport: delivered, endpoint: endpoint, options: TrackingQueueOptions(batchSize: 100),
                                       journal: try FileEventJournal(directory: directory), clock: ManualClock())
        #expect(await relaunched.flush(timeout: .seconds(5)))
        #expect(goalIds(in: delivered.requests).sorted() == (0..<12).map { "g\($0)" }.sorted())
        relaunched.stop()
    }
}
