import ConvertAppLifecycle
import ConvertMemory
import ConvertQueue
import ConvertSwiftSDK
import ConvertSynchronization
import ConvertTesting
import ConvertTransport
import Foundation
import Testing

private let endpoint = TrackingEndpoint(template: "https://[project_id].metrics.example.com/v1", sdkKey: "key")

/// An SDK whose tracking never gets through (503), so a flush waits for its deadline on `clock`.
private func stalledSDK(clock: ManualClock) throws -> ConvertSwiftSDK {
    let queue = TrackingQueue(transport: StubTransport { _ in HTTPResponse(status: 503) }, endpoint: endpoint,
                              options: TrackingQueueOptions(batchSize: 100, releaseInterval: .seconds(60)), clock: clock)
    for number in 0..<3 { queue.enqueue(goal(number)) }
    return ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "key", persistence: .memory),
                           ports: ConvertPorts(configSource: try StubConfigSource(initial: Fixtures.data(.cdnConfigBaseline)),
                                               visitorStore: MemoryVisitorDataStore(), visitorIdStore: MemoryVisitorIdStore(),
                                               trackingSink: queue, sleepClock: clock))
}

/// A byte store that counts what is written to it.
private final class CountingByteStore: ByteStore, Sendable {
    private let inner = MemoryByteStore()
    private let counts = Locked((writes: 0, bytes: 0))

    func read(_ name: String) throws -> Data? { try inner.read(name) }
    func write(_ data: Data, to name: String) throws {
        counts.withValue { $0 = ($0.writes + 1, $0.bytes + data.count) }
        try inner.write(data, to: name)
    }
    func remove(_ name: String) throws { try inner.remove(name) }

    var writes: Int { counts.value.writes }
    var bytes: Int { counts.value.bytes }
}

/// What ties an SDK to the app goes when the SDK goes.
@Suite struct AppLifetimeTests {
    @Test func aReleasedSDKTakesItsAppConnectionWithIt() async throws {
        let app = FakeAppLifecycle()
        var sdk: ConvertSwiftSDK? = try stalledSDK(clock: ManualClock())
        weak let released = sdk
        weak let connection = sdk?.connectApp(lifecycle: app)
        #expect(connection != nil && app.isObserved)
        sdk = nil
        #expect(released == nil)
        try await eventually("the connection is dropped with its SDK", timeout: .seconds(10)) { connection == nil }
        #expect(!app.isObserved, "the app's lifecycle is no longer observed")
    }

    @Test func aBackgroundFlushUnderWayDoesNotKeepTheSDKAlive() async throws {
        let app = FakeAppLifecycle()
        let clock = ManualClock()
        var sdk: ConvertSwiftSDK? = try stalledSDK(clock: clock)
        weak let released = sdk
        sdk?.connectApp(lifecycle: app, options: AppOptions(backgroundFlushDeadline: .seconds(25)))
        app.send(.didEnterBackground)
        // The flush waits: the clock never reaches its deadline.
        try await clock.waitForSleepers(2)
        #expect(app.endings.isEmpty)
        sdk = nil
        try await eventually("the SDK is freed while its flush waits", timeout: .seconds(10)) { released == nil }
        await app.grantsEnded(1)
        #expect(app.endings == [1: 1], "the background time is given back once")
    }

    @Test func anUploadWritesOnlyItsOwnEventsToTheLedger() async throws {
        // An earlier launch's delivered upload, carried until the journal's copies come up again.
        let carried = try (0..<200).map { number in
            String(decoding: try JSONEncoder().encode(goal(1_000 + number)), as: UTF8.self)
        }
        let ledger = CountingByteStore()
        let earlier = #"[{"label":"earlier","events":[\#(carried.joined(separator: ","))],"delivered":true,"carried":0}]"#
        try ledger.write(Data(earlier.utf8), to: "background-uploads.json")
        let carriedBytes = earlier.utf8.count
        let (writesBefore, bytesBefore) = (ledger.writes, ledger.bytes)

        let system = FakeBackgroundUploadSystem()
        let delivery = BackgroundTrackingDelivery(session: system.session(identifier: "ledger-test"), endpoint: endpoint,
                                                  ledger: ledger, clock: ManualClock(), reconcileTimeout: .zero)
        // Each full batch at once: the clock does not move, so no request may wait on it.
        let queue = TrackingQueue(delivery: delivery, options: TrackingQueueOptions(batchSize: 10, releaseInterval: .seconds(60),
                                                                                    minimumRequestInterval: .zero),
                                  clock: ManualClock())
        for round in 0..<3 {
            for number in 0..<10 { queue.enqueue(goal(round * 10 + number)) }
            await system.uploadsHeld(1)
            system.completeOldest(status: 200)
            #expect(await queue.flush(timeout: .seconds(10)))
        }
        #expect(goalIds(in: system.received).count == 30)
        let (writes, bytes) = (ledger.writes - writesBefore, ledger.bytes - bytesBefore)
        // Reconciling the earlier launch may write the carried entry once; each upload adds only its own.
        #expect(writes <= 4, "\(writes) ledger writes for 3 uploads")
        #expect(bytes < carriedBytes * 2, "\(bytes) bytes written; the carried entry alone is \(carriedBytes)")
        queue.stop()
    }
}
