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
private let identifier = "com.convert.sdk.tracking.test"

/// One launch of an app: a background delivery and a queue over the launch's session, with
/// the journal and ledger that outlive it.
private struct Launch {
    let delivery: BackgroundTrackingDelivery
    let queue: TrackingQueue

    init(system: FakeBackgroundUploadSystem, journal: any EventJournal, ledger: any ByteStore, clock: ManualClock) {
        delivery = BackgroundTrackingDelivery(session: system.session(identifier: identifier), endpoint: endpoint,
                                              ledger: ledger, clock: clock, reconcileTimeout: .seconds(5))
        queue = TrackingQueue(delivery: delivery, options: TrackingQueueOptions(batchSize: 10, releaseInterval: .seconds(60)),
                              journal: journal, clock: ManualClock())
    }

    /// The process is killed: nothing of it runs again.
    func kill(_ system: FakeBackgroundUploadSystem) {
        system.killApp()
        queue.stop()
    }
}

/// A launch killed while the system held its first upload of 30 events: what outlives it.
private struct KilledDuringUpload {
    let system = FakeBackgroundUploadSystem()
    let journal = MemoryEventJournal()
    let ledger = MemoryByteStore()
    /// The events of the upload held when the launch was killed.
    let onTheWire: Int

    init() async {
        let first = Launch(system: system, journal: journal, ledger: ledger, clock: ManualClock())
        for number in 0..<30 { first.queue.enqueue(goal(number)) }
        await system.uploadsHeld(1)
        onTheWire = goalIds(in: system.uploads.map(\.request)).count
        first.kill(system)
    }

    /// The next launch, on the same session, journal and ledger.
    func relaunch(clock: ManualClock = ManualClock()) -> Launch {
        Launch(system: system, journal: journal, ledger: ledger, clock: clock)
    }
}

/// Lets the system answer every upload with 200 until `queue` has nothing pending.
private func deliverEverything(_ system: FakeBackgroundUploadSystem, _ queue: TrackingQueue) async {
    let flushed = Task { await queue.flush(timeout: .seconds(30)) }
    // Whichever comes first: the next upload to answer, or the queue settled.
    while queue.counters.pending > 0 {
        if system.uploads.isEmpty {
            try? await Task.sleep(for: .milliseconds(1))
        } else {
            system.completeOldest(status: 200)
        }
    }
    _ = await flushed.value
}

@Suite struct BackgroundDeliveryTests {
    @Test func uploadSessionContractHoldsForTheFake() async throws {
        let system = FakeBackgroundUploadSystem()
        try await BackgroundUploadSessionContract.verify(
            url: URL(string: "https://example.com/track")!, launch: { system.session(identifier: "contract") },
            settle: { while !system.uploads.isEmpty { system.completeOldest(status: 200) } },
            kill: system.killApp)
    }

    @Test func eventsAreAcknowledgedOnlyWhenTheUploadCompletes() async throws {
        let system = FakeBackgroundUploadSystem()
        let journal = MemoryEventJournal()
        let launch = Launch(system: system, journal: journal, ledger: MemoryByteStore(), clock: ManualClock())
        for number in 0..<10 { launch.queue.enqueue(goal(number)) }
        await system.uploadsHeld(1)
        // Suspended with the upload in the system's hands: nothing is acknowledged yet.
        #expect(try journal.pending().count == 10)
        #expect(system.uploads.first?.request.headers.contains { $0.name == "User-Agent" && $0.value.hasPrefix("ConvertAgent/") } == true)
        system.completeOldest(status: 200)
        #expect(await launch.queue.flush(timeout: .seconds(5)))
        #expect(try journal.pending().isEmpty)
        #expect(goalIds(in: system.received).sorted() == (0..<10).map { "g\($0)" }.sorted())
        launch.queue.stop()
    }

    @Test func aKillDuringAnUploadThatThenSucceedsIsDeliveredOnceAfterRelaunch() async throws {
        let killed = await KilledDuringUpload()
        let system = killed.system, journal = killed.journal
        // The daemon finishes the upload while no process listens.
        system.completeOldest(status: 200)

        let second = killed.relaunch()
        await deliverEverything(system, second.queue)
        let received = goalIds(in: system.received)
        #expect(Set(received) == Set((0..<30).map { "g\($0)" }), "nothing lost")
        #expect(received.count == 30, "nothing sent twice: \(received.count)")
        #expect(try journal.pending().isEmpty)
        second.queue.stop()
    }

    @Test func aKillWhoseUploadIsStillUnsettledAtRelaunchRepeatsAtMostThatBatch() async throws {
        let killed = await KilledDuringUpload()
        let system = killed.system, journal = killed.journal

        // The upload is still held at relaunch; the reconciliation waits for it up to 5 s.
        let clock = ManualClock()
        let second = killed.relaunch(clock: clock)
        try await clock.waitForSleepers(1)
        // Its body reached the server, but the answer is lost: the launch cannot know.
        system.completeOldest(status: nil, reachedServer: true)
        await deliverEverything(system, second.queue)
        let received = goalIds(in: system.received)
        #expect(Set(received) == Set((0..<30).map { "g\($0)" }), "nothing lost")
        #expect(received.count - 30 <= killed.onTheWire, "at most the batch on the wire repeated: \(received.count - 30)")
        #expect(try journal.pending().isEmpty)
        second.queue.stop()
    }

    @Test func anUploadDeferredInTheBackgroundIsCancelledOnlyOnceTheAppIsBack() async throws {
        let system = FakeBackgroundUploadSystem()
        let clock = ManualClock()
        let delivery = BackgroundTrackingDelivery(session: system.session(identifier: identifier), endpoint: endpoint,
                                                  ledger: MemoryByteStore(), clock: clock, answerTimeout: .seconds(120))
        delivery.noteLifecycle(.didEnterBackground)
        let answer = Task { await delivery.deliver([goal(1)]) }
        await system.uploadsHeld(1)
        try await clock.waitForSleepers(1)
        for _ in 0..<3 {
            clock.advance(by: .seconds(121))
            // The deadline is set again rather than the upload cancelled (a cancelled one ends the wait).
            try await clock.waitForSleepers(1, timeout: .seconds(10))
        }
        #expect(system.uploads.count == 1, "the system's deferred upload is left to it while the app is away")
        delivery.noteLifecycle(.didBecomeActive)
        clock.advance(by: .seconds(121))
        let result = await answer.value
        #expect(system.uploads.isEmpty, "cancelled once the deadline passed in the foreground")
        guard case .retryLater = result else {
            Issue.record("expected a retry, got \(result)")
            return
        }
    }

    @Test func anUploadUnsettledAtTheReconcileDeadlineIsCancelledAndSentAgain() async throws {
        let killed = await KilledDuringUpload()
        let system = killed.system

        let stale = try #require(system.uploads.first).label
        let clock = ManualClock()
        let second = killed.relaunch(clock: clock)
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(5))
        while system.uploads.contains(where: { $0.label == stale }) { try await Task.sleep(for: .milliseconds(1)) }
        await deliverEverything(system, second.queue)
        let received = goalIds(in: system.received)
        #expect(Set(received) == Set((0..<30).map { "g\($0)" }))
        #expect(received.count == 30, "the cancelled upload never reached the server")
        second.queue.stop()
    }

    @Test func theCompletionHandlerRunsExactlyOnceOnEveryPath() async throws {
        let calls = Locked<[String: Int]>([:])
        func handler(_ name: String) -> @Sendable () -> Void { { calls.withValue { $0[name, default: 0] += 1 } } }

        // No app connection (Linux, or an app that did not opt in): at once.
        let plain = ConvertSwiftSDK(configData: try Fixtures.data(.cdnConfigBaseline))
        plain.handleEventsForBackgroundURLSession(identifier: identifier, completionHandler: handler("plain"))
        #expect(calls.value["plain"] == 1)

        let system = FakeBackgroundUploadSystem()
        let clock = ManualClock()
        let delivery = BackgroundTrackingDelivery(session: system.session(identifier: identifier), endpoint: endpoint,
                                                  ledger: MemoryByteStore(), clock: clock, handlerTimeout: .seconds(25))
        let sdk = ConvertSwiftSDK(configData: try Fixtures.data(.cdnConfigBaseline))
        sdk.connectApp(lifecycle: nil, backgroundDelivery: delivery)

        // Another session's identifier: at once.
        sdk.handleEventsForBackgroundURLSession(identifier: "someone.else", completionHandler: handler("other"))
        #expect(calls.value["other"] == 1)

        // The SDK's session: when the system has delivered its events, and only then.
        sdk.handleEventsForBackgroundURLSession(identifier: identifier, completionHandler: handler("finished"))
        #expect(calls.value["finished"] == nil)
        system.finishEvents(identifier: identifier)
        system.finishEvents(identifier: identifier)
        #expect(calls.value["finished"] == 1)

        // A second wake before the first one's end: the first handler runs then, the second later.
        sdk.handleEventsForBackgroundURLSession(identifier: identifier, completionHandler: handler("replaced"))
        sdk.handleEventsForBackgroundURLSession(identifier: identifier, completionHandler: handler("replacing"))
        #expect(calls.value["replaced"] == 1 && calls.value["replacing"] == nil)

        // The session never says it is done: the handler runs at the timeout, once.
        clock.advance(by: .seconds(25))
        for _ in 0..<100 where calls.value["replacing"] == nil { await Task.yield() }
        try await clock.waitForSleepers(0)
        system.finishEvents(identifier: identifier)
        #expect(calls.value["replacing"] == 1)

        // A delivery released while holding one: it runs then.
        var released: BackgroundTrackingDelivery? = BackgroundTrackingDelivery(
            session: system.session(identifier: "released"), endpoint: endpoint, ledger: MemoryByteStore(), clock: ManualClock())
        #expect(released?.handleEvents(forSession: "released", completionHandler: handler("released")) == true)
        released = nil
        #expect(calls.value["released"] == 1)
        #expect(calls.value.values.allSatisfy { $0 == 1 })
    }
}
