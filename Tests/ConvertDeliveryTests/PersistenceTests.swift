import ConvertFileStorage
import ConvertMemory
import ConvertSwiftSDK
import ConvertTesting
import ConvertVisitor
import Foundation
import Testing

@Suite(.serialized) struct PersistenceTests {
    @Test func storageContractsHoldForMemoryAndFileAdapters() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await VisitorDataStoreContract.verify { MemoryVisitorDataStore() }
        try await VisitorDataStoreContract.verify(
            make: { try FileVisitorDataStore(directory: directory.appendingPathComponent("visitors")) },
            reopen: { try FileVisitorDataStore(directory: directory.appendingPathComponent("visitors")) })
        try ByteStoreContract.verify { MemoryByteStore() }
        try ByteStoreContract.verify { try FileByteStore(directory: directory.appendingPathComponent("blobs")) }
        try EventJournalContract.verify { MemoryEventJournal() }
        try EventJournalContract.verify(
            make: { try FileEventJournal(directory: directory.appendingPathComponent("journal")) },
            reopen: { try FileEventJournal(directory: directory.appendingPathComponent("journal")) })
        for file in ["visitors/visitors.log", "blobs/large", "journal/events.journal"] {
            #expect(FileStorage.permissions(of: directory.appendingPathComponent(file)) == 0o600, "\(file)")
        }
    }

    @Test func changesAreWrittenBehindWithinTheWindowAndAtOnceOnFlush() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try FileVisitorDataStore(directory: directory)
        let first = VisitorKey(accountId: "1", projectId: "2", visitorId: "first")
        store.update(first) { $0.bucketing = ["100": "200"] }
        var seen = false
        for _ in 0..<200 where !seen {
            try await Task.sleep(for: .milliseconds(10))
            seen = try FileVisitorDataStore(directory: directory).data(for: first) != nil
        }
        #expect(seen, "a change must reach the file without a flush")
        let second = VisitorKey(accountId: "1", projectId: "2", visitorId: "second")
        store.update(second) { $0.goals = ["g"] }
        #expect(await store.flush() == 2)
        #expect(try FileVisitorDataStore(directory: directory).data(for: second)?.goals == ["g"])
        withExtendedLifetime(store) {}
    }

    @Test func changeLogRoundTripsAwkwardText() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let awkward = ["quote\"inside", "back\\slash", "new\nline", "tab\t", "\u{1}ctl", "é🚀", ""]
        var expected: [VisitorKey: VisitorData] = [:]
        do {
            let store = try FileVisitorDataStore(directory: directory)
            for (i, text) in awkward.enumerated() {
                let key = VisitorKey(accountId: "1", projectId: "2", visitorId: "\(text)-\(i)")
                let data = VisitorData(bucketing: [text + "e": text + "v", "100": "200"], goals: [text + "g"],
                                       segments: VisitorSegments(country: text, customSegments: [text]),
                                       locations: [text + "l"])
                store.update(key) { $0 = data }
                expected[key] = data
            }
            // Written now rather than when the store goes (its loader may hold it a moment longer).
            _ = await store.flush()
        }
        let reopened = try FileVisitorDataStore(directory: directory)
        await reopened.prepare()
        for (key, data) in expected {
            #expect(reopened.data(for: key) == data, "\(key)")
        }
    }

    @Test func stickyDecisionsAndGoalDedupSurviveANewSDK() async throws {
        let config = try Fixtures.data(.cdnConfigBaseline)
        let server = try LoopbackHTTPServer { request in request.method == "GET" ? configReply(config) : .respond(status: 200) }
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var decided: [String: String] = [:]
        do {
            let sdk = ConvertSwiftSDK(configuration: loopbackConfiguration(server, directory: directory), logSink: RecordingLogSink())
            try await sdk.ready(timeout: .patience)
            for i in 0..<30 {
                let context = sdk.createContext(visitorId: "r\(i)", attributes: ["mobile": true])
                context.setLocationProperties(["location": "pricing"])
                decided["r\(i)"] = await context.runExperience("test-experience-ab-fullstack-1")?.id
                #expect(await context.trackConversion("button-primary-click") == .tracked(eventCount: 1))
            }
            let recorder = await EventRecorder(sdk, events: [.dataStoreQueueReleased])
            await sdk.flush()
            guard case .dataStoreQueueReleased(let released) = try await recorder.wait(for: .dataStoreQueueReleased)[0] else {
                throw CancellationError()
            }
            #expect(released.recordCount >= 30)
        }
        let sdk = ConvertSwiftSDK(configuration: loopbackConfiguration(server, directory: directory), logSink: RecordingLogSink())
        try await sdk.ready(timeout: .patience)
        for i in 0..<30 {
            let context = sdk.createContext(visitorId: "r\(i)", attributes: ["desktop": "false"])
            context.setLocationProperties(["location": "pricing"])
            let again = await context.runExperience("test-experience-ab-fullstack-1")
            #expect(again?.id == decided["r\(i)"])
            #expect(again?.isStored == true)
            #expect(await context.trackConversion("button-primary-click") == .duplicate)
        }
        #expect(FileStorage.permissions(of: directory.appendingPathComponent("visitors.log")) == 0o600)
    }

    @Test func autoVisitorIdPersistsInTheStorageDirectory() async throws {
        let server = try LoopbackHTTPServer { _ in configReply((try? Fixtures.data(.staticConfig)) ?? Data()) }
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = ConvertSwiftSDK(configuration: loopbackConfiguration(server, directory: directory), logSink: RecordingLogSink())
        let id = first.createContext().visitorId
        let second = ConvertSwiftSDK(configuration: loopbackConfiguration(server, directory: directory), logSink: RecordingLogSink())
        #expect(second.createContext().visitorId == id)
        #expect(UUID(uuidString: id) != nil)
    }

    @Test func corruptCacheAndStoreFilesAreRecoveredFrom() async throws {
        let config = try Fixtures.data(.cdnConfigBaseline)
        let server = try LoopbackHTTPServer { _ in configReply(config) }
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("{ broken".utf8).write(to: directory.appendingPathComponent("config-10035569_10034190-default.json"))
        try Data("not a snapshot".utf8).write(to: directory.appendingPathComponent("visitors.snapshot"))
        try Data("{\"k\":\"1-2-v\",\"d\":{\"bucketing\":{},\"goals\":[],\"segments\":{},\"locations\":[]}}\n{\"k\":torn".utf8)
            .write(to: directory.appendingPathComponent("visitors.log"))
        try Data("E 1 bm90IGFuIGV2ZW50\nE 2 !!!\nA".utf8).write(to: directory.appendingPathComponent("events.journal"))
        let logs = RecordingLogSink()
        let sdk = ConvertSwiftSDK(configuration: loopbackConfiguration(server, directory: directory), logSink: logs)
        try await sdk.ready(timeout: .patience)
        #expect(sdk.config?.accountId == "10035569")
        #expect(logs.contains("cached config is unusable"))
        #expect(logs.contains("visitor snapshot is corrupt; moved aside"))
        #expect(logs.contains("visitor store: skipped 1 unreadable record(s)"))
        #expect(logs.contains("event journal"))
        let moved = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.contains(".corrupt-") }
        #expect(moved.count == 1)
        let context = sdk.createContext(visitorId: "after-recovery", attributes: ["mobile": true])
        context.setLocationProperties(["location": "pricing"])
        #expect(await context.runExperience("test-experience-ab-fullstack-1") != nil)
    }
}
