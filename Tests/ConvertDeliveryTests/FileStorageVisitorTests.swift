import ConvertFileStorage
import ConvertSwiftSDK
import ConvertTesting
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The file visitor store: damaged logs, its bound, loading off the initializer, and two
/// writers on one directory.
@Suite(.serialized) struct FileStorageVisitorTests {
    private func key(_ id: String) -> VisitorKey { VisitorKey(accountId: "1", projectId: "2", visitorId: id) }

    private func open(_ directory: URL, capacity: Int = 10_000, logs: RecordingLogSink? = nil) async throws -> FileVisitorDataStore {
        let store = try FileVisitorDataStore(directory: directory, capacity: capacity,
                                             log: logs.map { SDKLog(sink: $0, minimum: .debug) } ?? .silent)
        await store.prepare()
        return store
    }

    @Test func tornTailDoesNotSwallowTheNextRecord() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let store = try await open(directory)
            store.update(key("before")) { $0.bucketing = ["100": "200"] }
            _ = await store.flush()
        }
        let log = directory.appendingPathComponent("visitors.log")
        let handle = try FileHandle(forWritingTo: log)
        handle.seekToEndOfFile()
        handle.write(Data(#"{"d":{"bucketing":{"300":"4"#.utf8))
        try handle.close()

        let logs = RecordingLogSink()
        do {
            let store = try await open(directory, logs: logs)
            store.update(key("after")) { $0.bucketing = ["500": "600"] }
            _ = await store.flush()
        }
        #expect(logs.messages.filter { $0.contains("skipped") } == ["visitor store: skipped 1 unreadable record(s)"])
        let reopenLogs = RecordingLogSink()
        let store = try await open(directory, logs: reopenLogs)
        #expect(store.data(for: key("before"))?.bucketing == ["100": "200"])
        #expect(store.data(for: key("after"))?.bucketing == ["500": "600"], "the record after the torn line survives")
        #expect(!reopenLogs.contains("skipped"), "the torn line was cut off")
    }

    /// The loader thread holds the store while it loads. Paused at its very end, it must not keep
    /// alive a store its caller has dropped: a dropped store writes its changes and gives up the
    /// directory at once, so the next store opened there owns it (and cuts a torn tail itself).
    @Test func aStoreDroppedRightAfterItsLoadLetsGoAtOnce() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let paused = DispatchSemaphore(value: 0)
        let resume = DispatchSemaphore(value: 0)
        do {
            let store = try FileVisitorDataStore(directory: directory, capacity: 10_000, log: .silent, loadEnding: {
                paused.signal()
                // Long enough for the steps below; `prepare()` of a store that waits for its loader
                // to let go waits this out.
                _ = resume.wait(timeout: .now() + .seconds(1))
            })
            try await offThePool { paused.wait() }
            await store.prepare()
            store.update(key("dropped")) { $0.bucketing = ["100": "200"] }
        }
        let written = (try? String(contentsOf: directory.appendingPathComponent("visitors.log"), encoding: .utf8)) ?? ""
        let next = try await open(directory)
        resume.signal()
        #expect(written.contains(#""1-2-dropped""#), "the dropped store wrote its change at once")
        #expect(fileNames(in: directory, prefix: "visitors.log.w-").isEmpty, "the next store owns the directory")
        #expect(next.data(for: key("dropped"))?.bucketing == ["100": "200"])
    }

    #if os(Linux)
    /// A process starting a child copies every descriptor into it, and the child closes its
    /// copies only when it runs its program, which a busy machine may delay: such a copy of a
    /// dropped store's lock must not keep the directory locked, or the next store opened there
    /// writes beside the dropped one and leaves a torn tail for a later opener to cut.
    @Test func aCopiedLockDescriptorDoesNotKeepADroppedStoresRole() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var copies: [Int32] = []
        defer { for copy in copies { close(copy) } }
        do {
            let store = try await open(directory)
            store.update(key("before")) { $0.bucketing = ["100": "200"] }
            _ = await store.flush()
            copies = descriptors(of: directory.appendingPathComponent("visitors.log.lock")).map { dup($0) }
        }
        #expect(copies.count == 1 && copies.allSatisfy { $0 >= 0 }, "the store holds its lock file open")
        let handle = try FileHandle(forWritingTo: directory.appendingPathComponent("visitors.log"))
        handle.seekToEndOfFile()
        handle.write(Data(#"{"d":{"bucketing":{"300":"4"#.utf8))
        try handle.close()
        let logs = RecordingLogSink()
        let store = try await open(directory, logs: logs)
        #expect(fileNames(in: directory, prefix: "visitors.log.w-").isEmpty, "the next store owns the directory")
        #expect(logs.messages.filter { $0.contains("skipped") } == ["visitor store: skipped 1 unreadable record(s)"])
        #expect(store.data(for: key("before"))?.bucketing == ["100": "200"])
    }

    /// The same with real children: started one after another while stores are dropped and
    /// reopened, each briefly holds copies of the stores' descriptors.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/bin/true"), "needs /bin/true to start child processes"))
    func childProcessesStartedMeanwhileDoNotKeepADroppedStoresRole() async throws {
        let stop = Counter()
        let spawner = Thread {
            while stop.value == 0 {
                let child = Process()
                child.executableURL = URL(fileURLWithPath: "/bin/true")
                guard (try? child.run()) != nil else { return }
                child.waitUntilExit()
            }
        }
        spawner.start()
        defer { stop.increment() }
        var writersBeside = 0
        for _ in 0..<300 {
            let directory = temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            do {
                let store = try await open(directory)
                store.update(key("v")) { $0.goals = ["g"] }
            }
            let next = try await open(directory)
            if !fileNames(in: directory, prefix: "visitors.log.w-").isEmpty { writersBeside += 1 }
            #expect(next.data(for: key("v"))?.goals == ["g"])
        }
        #expect(writersBeside == 0, "each reopened store owns its directory")
    }

    /// This process's descriptors open on `file`.
    private func descriptors(of file: URL) -> [Int32] {
        let target = file.resolvingSymlinksInPath().path
        return fileNames(in: URL(fileURLWithPath: "/proc/self/fd"), prefix: "").compactMap { name in
            guard let fd = Int32(name),
                  let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)") else { return nil }
            return path == target ? fd : nil
        }
    }
    #endif

    @Test func alteredRecordIsSkippedNeverUsedAltered() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let store = try await open(directory)
            for id in ["a", "b", "c"] { store.update(key(id)) { $0.bucketing = ["100": "200"] } }
            _ = await store.flush()
        }
        let log = directory.appendingPathComponent("visitors.log")
        var text = try String(contentsOf: log, encoding: .utf8)
        #expect(text.split(separator: "\n").allSatisfy(isSealed))
        let line = try #require(text.split(separator: "\n").first { $0.contains(#""1-2-b""#) })
        text = text.replacingOccurrences(of: line, with: line.replacingOccurrences(of: #""200""#, with: #""201""#))
        try Data(text.utf8).write(to: log)
        let logs = RecordingLogSink()
        let store = try await open(directory, logs: logs)
        #expect(store.data(for: key("a"))?.bucketing == ["100": "200"])
        #expect(store.data(for: key("b")) == nil, "never the altered decision")
        #expect(store.data(for: key("c"))?.bucketing == ["100": "200"])
        #expect(logs.messages.filter { $0.contains("skipped") } == ["visitor store: skipped 1 unreadable record(s)"])
    }

    @Test func oldFormatFilesAreReadOnceAndRewritten() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let snapshot = try JSONEncoder().encode(["1-2-old": VisitorData(bucketing: ["1": "2"], goals: ["g"])])
        try snapshot.write(to: directory.appendingPathComponent("visitors.snapshot"))
        let line = #"{"d":{"bucketing":{"3":"4"},"goals":[],"locations":[],"segments":{}},"k":"1-2-logged"}"#
        try Data((line + "\n").utf8).write(to: directory.appendingPathComponent("visitors.log"))
        do {
            let store = try await open(directory)
            #expect(store.data(for: key("old")) == VisitorData(bucketing: ["1": "2"], goals: ["g"]))
            #expect(store.data(for: key("logged"))?.bucketing == ["3": "4"])
        }
        let rewritten = try String(contentsOf: directory.appendingPathComponent("visitors.snapshot"), encoding: .utf8)
        #expect(rewritten.split(separator: "\n").count == 2 && rewritten.split(separator: "\n").allSatisfy(isSealed))
        let store = try await open(directory)
        #expect(store.count == 2)
    }

    @Test func capacityBoundsMemoryAndFilesAcrossReopening() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let store = try await open(directory, capacity: 100)
            for i in 0..<1_000 { store.update(key("v\(i)")) { $0.bucketing = ["100": "\(i)"] } }
            #expect(store.count <= 100)
            #expect(store.data(for: key("v999"))?.bucketing == ["100": "999"], "the newest visitor is kept")
            _ = await store.flush()
        }
        do {
            let store = try await open(directory, capacity: 100)
            #expect(store.count <= 100)
            #expect(store.data(for: key("v999"))?.bucketing == ["100": "999"])
            for i in 1_000..<5_000 { store.update(key("v\(i)")) { $0.bucketing = ["100": "\(i)"] } }
            #expect(store.count <= 100)
            _ = await store.flush()
        }
        let again = try await open(directory, capacity: 100)
        #expect(again.count <= 100)
        #expect(again.data(for: key("v4999"))?.bucketing == ["100": "4999"])
        // The files hold the visitors kept plus at most one change log's worth, not all 5,000.
        let unbounded = try await open(directory, capacity: 1_000_000)
        #expect(unbounded.count <= 100 + 1_025)
    }

    @Test func aWriteDuringTheLoadKeepsTheStoredDataAndPrepareWaitsForTheLoad() async throws {
        let source = temporaryDirectory()
        let directory = temporaryDirectory()
        defer {
            try? FileManager.default.removeItem(at: source)
            try? FileManager.default.removeItem(at: directory)
        }
        let visitors = 5_000
        do {
            let store = try await open(source, capacity: visitors)
            try await offThePool {
                for i in 0..<visitors { store.update(VisitorKey(accountId: "1", projectId: "2", visitorId: "v\(i)")) { $0.bucketing = ["100": "\(i % 7)"] } }
            }
            _ = await store.flush()
        }
        let stored = try Data(contentsOf: source.appendingPathComponent("visitors.log"))
        #expect(stored.filter { $0 == UInt8(ascii: "\n") }.count == visitors)
        try stored.write(to: directory.appendingPathComponent("visitors.snapshot"))
        let store = try FileVisitorDataStore(directory: directory, capacity: visitors + 1)
        let early = DispatchSemaphore(value: 0)
        let earlyWrite = Thread {
            early.signal()
            store.update(VisitorKey(accountId: "1", projectId: "2", visitorId: "v5")) { $0.goals.insert("early") }
        }
        earlyWrite.start()
        try await offThePool { early.wait() }
        await store.prepare()
        #expect(store.data(for: key("v0"))?.bucketing == ["100": "0"])
        try await eventually("the early write") { store.data(for: key("v5"))?.goals == ["early"] }
        #expect(store.data(for: key("v5"))?.bucketing == ["100": "5"], "a write during the load keeps the stored data")
        #expect(store.data(for: key("v\(visitors - 1)"))?.bucketing == ["100": "\((visitors - 1) % 7)"])
        #expect(store.count == visitors)
    }

    @Test func aFIFOPlantedAsTheSnapshotNeitherHangsNorFeedsTheStore() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(mkfifo(directory.appendingPathComponent("visitors.snapshot").path, 0o600) == 0)
        let logs = RecordingLogSink()
        let store = try FileVisitorDataStore(directory: directory, log: SDKLog(sink: logs, minimum: .debug))
        await store.prepare()
        #expect(store.count == 0)
        store.update(key("after")) { $0.goals = ["g"] }
        #expect(store.data(for: key("after"))?.goals == ["g"], "the store still works")
    }

    @Test func twoWritersOnOneDirectoryKeepEachOthersVisitorsThroughCompactions() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        func fill(_ store: FileVisitorDataStore, _ prefix: String) {
            for round in 0..<6 {
                for i in 0..<600 {
                    store.update(key("\(prefix)\(i)")) { data in
                        if round == 0 { data.bucketing = ["100": "\(prefix)-\(i)"] }
                        data.goals.insert("goal-\(round)")
                    }
                }
            }
        }
        do {
            let first = try await open(directory)
            let second = try await open(directory)
            #expect(fileNames(in: directory, prefix: "visitors.log.w-").count == 2, "the second writes its own log")
            fill(first, "a")
            fill(second, "b")
            _ = await first.flush()
            _ = await second.flush()
            let third = try await open(directory)
            for prefix in ["a", "b"] {
                for i in stride(from: 0, to: 600, by: 37) {
                    #expect(third.data(for: key("\(prefix)\(i)"))?.bucketing == ["100": "\(prefix)-\(i)"])
                    #expect(third.data(for: key("\(prefix)\(i)"))?.goals.count == 6)
                }
            }
        }
        do {
            let store = try await open(directory)
            #expect(store.count == 1_200)
            for prefix in ["a", "b"] {
                for i in 0..<600 where store.data(for: key("\(prefix)\(i)"))?.bucketing != ["100": "\(prefix)-\(i)"] {
                    Issue.record("\(prefix)\(i) lost its decision")
                }
            }
        }
        // A released store lets its writer lock go once its last background work ends; the next
        // sole opener (the owner) folds every such log in.
        var folded = false
        for _ in 0..<100 where !folded {
            let owner = try await open(directory)
            folded = owner.count == 1_200 && fileNames(in: directory, prefix: "visitors.log.w-").isEmpty
            if !folded { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(folded, "the stopped writers' logs were folded in")
    }
}

/// Records without segments are read by a hand-written reader: awkward text must survive it.
@Suite struct FileStorageVisitorTextTests {
    @Test func awkwardTextRoundTripsWithoutSegmentsAndAfterATornLine() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let awkward = ["quote\"inside", "back\\slash", "new\nline", "tab\t", "\u{1}ctl", "\u{7f}del", "é🚀", "", "a-b-c", "\\u0041"]
        var expected: [VisitorKey: VisitorData] = [:]
        do {
            let store = try FileVisitorDataStore(directory: directory)
            for (i, text) in awkward.enumerated() {
                let key = VisitorKey(accountId: "1", projectId: "2", visitorId: "\(text)-\(i)")
                let data = VisitorData(bucketing: [text + "e": text + "v"], goals: [text + "g", "other"], locations: [text + "l"])
                store.update(key) { $0 = data }
                expected[key] = data
            }
            _ = await store.flush()
        }
        let log = directory.appendingPathComponent("visitors.log")
        let handle = try FileHandle(forWritingTo: log)
        handle.seekToEndOfFile()
        handle.write(Data(#"{"d":{"bucketing":{},"goals":[],"locations":[],"segments":{}},"k":"1-2-torn"}"#.utf8))
        try handle.close()
        let reopened = try FileVisitorDataStore(directory: directory)
        await reopened.prepare()
        #expect(reopened.count == awkward.count)
        for (key, data) in expected {
            #expect(reopened.data(for: key) == data, "\(key)")
        }
    }
}
