import ConvertAppLifecycle
import ConvertAppleAdapters
import ConvertMemory
import ConvertQueue
import ConvertSwiftSDK
import ConvertSynchronization
import ConvertTesting
import ConvertTransport
import Foundation
import Testing

private let endpoint = TrackingEndpoint(template: "https://[project_id].metrics.example.com/v1", sdkKey: "key")

/// An SDK whose queue holds events for a minute unless flushed, over `transport`.
private func appSDK(transport: StubTransport, visitorIds: any VisitorIdStore = MemoryVisitorIdStore()) throws -> (ConvertSwiftSDK, TrackingQueue) {
    let queue = TrackingQueue(transport: transport, endpoint: endpoint,
                              options: TrackingQueueOptions(batchSize: 100, releaseInterval: .seconds(3600)))
    let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "key", persistence: .memory),
                              ports: ConvertPorts(configSource: try StubConfigSource(initial: Fixtures.data(.cdnConfigBaseline)),
                                                  visitorStore: MemoryVisitorDataStore(), visitorIdStore: visitorIds,
                                                  trackingSink: queue))
    return (sdk, queue)
}

/// Names standing for a framework's notifications, one per transition.
private func names(_ count: Int) -> [Notification.Name] {
    (0..<count).map { Notification.Name("test.\(UUID().uuidString).\($0)") }
}

/// The Apple adapters' behaviour, with the frameworks' calls replaced by the test kit's fakes.
@Suite struct AppleSideTests {
    @Test func anExpiryRacingTheFlushsEndEndsTheTaskOnceBeforeTheHandlerReturns() async throws {
        let (sdk, queue) = try appSDK(transport: StubTransport { _ in HTTPResponse(status: 200) })
        let tasks = FakeBackgroundTasks()
        let center = NotificationCenter()
        let uiKit = names(4)
        let source = NotificationLifecycleSource.uiKit(
            center: center, names: uiKit, begin: { tasks.begin(expiration: $0) }, end: { tasks.end($0) },
            isMainThread: { tasks.isMainThread }, onMain: { tasks.onMain($0) })
        sdk.connectApp(lifecycle: source)
        queue.enqueue(goal(1))

        tasks.asMain { center.post(name: uiKit[2], object: nil) }
        // The flush ends on a task's thread: its end of the task waits for the main thread,
        // which is busy until the system's expiration handler runs there.
        try await eventually("the flush's end queued for the main thread") { tasks.queued == 1 }
        #expect(tasks.endings.isEmpty)
        tasks.expire()
        #expect(tasks.endedInTime == [1], "the task must end before the expiration handler returns")
        tasks.runMain()
        #expect(tasks.endings == [1: 1])
        queue.stop()
    }

    @Test func aRefusedGrantStartsNoFlushAndIsEndedOnce() async throws {
        let transport = StubTransport { _ in HTTPResponse(status: 200) }
        let (sdk, queue) = try appSDK(transport: transport)
        let app = FakeAppLifecycle()
        sdk.connectApp(lifecycle: app)
        queue.enqueue(goal(1))
        app.refuseNextGrant()
        app.send(.didEnterBackground)
        await app.grantsEnded(1)
        await letTasksRun()
        #expect(app.endings == [1: 1])
        #expect(transport.requests.isEmpty, "no flush runs in time the system refused")
        #expect(queue.counters.pending == 1)
        queue.stop()
    }

    @Test func watchOSRefusalIsToldOnceAndReleasesNothingWaiting() async throws {
        let expired = Locked(0)
        // The system refuses: it calls the block once, with `true`, before the grant is returned.
        let time = BackgroundTime.expiringActivity { block in block(true) }
        let grant = time { expired.withValue { $0 += 1 } }
        grant.end()
        #expect(expired.value == 1)
    }

    @Test func terminatingWaitsForTheLastFlushInTimeAskedFor() async throws {
        let transport = StubTransport { _ in
            Thread.sleep(forTimeInterval: 0.05)
            return HTTPResponse(status: 200)
        }
        let (sdk, queue) = try appSDK(transport: transport)
        let app = FakeAppLifecycle()
        // A deadline long enough for a starved machine: the flush ends well before it.
        sdk.connectApp(lifecycle: app, options: AppOptions(terminateFlushDeadline: .patience))
        for number in 0..<3 { queue.enqueue(goal(number)) }
        // Posted from a thread of the system's, as UIKit does (from the main thread).
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread {
                app.send(.willTerminate)
                done.resume()
            }.start()
        }
        // The process ends once the notification's handler returns: by then the flush is done.
        #expect(goalIds(in: transport.requests).sorted() == ["g0", "g1", "g2"])
        #expect(app.grantsBegun == 1 && app.endings == [1: 1])
        queue.stop()
    }

    @Test func macOSFlushesWhenTheAppResignsActive() async throws {
        let transport = StubTransport { _ in HTTPResponse(status: 200) }
        let (sdk, queue) = try appSDK(transport: transport)
        let center = NotificationCenter()
        let appKit = names(5)
        let begun = Locked(0)
        sdk.connectApp(lifecycle: NotificationLifecycleSource.appKit(center: center, names: appKit) { _ in
            begun.withValue { $0 += 1 }
            return .unlimited
        })
        queue.enqueue(goal(1))
        // Switching to another app or minimising: didResignActive, no didHide.
        center.post(name: appKit[2], object: nil)
        try await eventually("a flush on didResignActive") { !transport.requests.isEmpty }
        #expect(begun.value == 1)
        #expect(goalIds(in: transport.requests) == ["g1"])
        queue.stop()
    }

    @Test func aSecondSDKWithTheSameKeySharesTheBackgroundSession() async throws {
        let system = FakeBackgroundUploadSystem()
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = "shared-\(UUID().uuidString.prefix(8))"
        let platform = AppPlatform(openSession: { identifier, _ in system.session(identifier: identifier) })
        func start(_ subdirectory: String) -> ConvertSwiftSDK {
            ConvertSwiftSDK(configuration: ConvertConfiguration(
                sdkKey: key, persistence: .file, storageDirectory: directory.appendingPathComponent(subdirectory)),
                app: AppOptions(), platform: platform, logSink: RecordingLogSink())
        }
        let first = start("first")
        let second = start("second")
        #expect(system.openedWhileAlive == 0, "one background session per identifier per process")
        _ = await first.shutdown(timeout: .milliseconds(100))
        _ = await second.shutdown(timeout: .milliseconds(100))
    }

    @Test func aTransientKeychainFailureIsReadAgainNotReplaced() throws {
        let keychain = FakeKeychain(id: "kept-id")
        let store = KeychainVisitorIdStore(service: "test", account: "id", read: keychain.read, write: keychain.write,
                                           retryDelays: [.milliseconds(1)])
        keychain.failNextReads(1)
        let (sdk, queue) = try appSDK(transport: StubTransport { _ in HTTPResponse(status: 200) }, visitorIds: store)
        #expect(sdk.createContext().visitorId == "kept-id", "a read failing once is tried again")
        #expect(keychain.id == "kept-id")
        queue.stop()
    }

    @Test func aKeychainLockedBeforeTheFirstUnlockKeepsItsIdForLater() throws {
        let keychain = FakeKeychain(id: "kept-id")
        let store = KeychainVisitorIdStore(service: "test", account: "id", read: keychain.read, write: keychain.write,
                                           retryDelays: [.milliseconds(1)])
        keychain.lock()
        let (sdk, queue) = try appSDK(transport: StubTransport { _ in HTTPResponse(status: 200) }, visitorIds: store)
        let early = sdk.createContext().visitorId
        #expect(early != "kept-id")
        #expect(keychain.id == "kept-id", "the kept id is never replaced")
        keychain.lock(false)
        #expect(sdk.createContext().visitorId == "kept-id", "the kept id once the device is unlocked")

        // Nothing kept: the id used while locked is the one written once the Keychain opens.
        let empty = FakeKeychain()
        empty.lock()
        let (fresh, freshQueue) = try appSDK(transport: StubTransport { _ in HTTPResponse(status: 200) }, visitorIds: KeychainVisitorIdStore(
            service: "test", account: "id", read: empty.read, write: empty.write, retryDelays: []))
        let provisional = fresh.createContext().visitorId
        empty.lock(false)
        #expect(fresh.createContext().visitorId == provisional)
        #expect(empty.id == provisional)
        queue.stop()
        freshQueue.stop()
    }
}
