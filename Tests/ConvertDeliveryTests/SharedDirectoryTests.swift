import ConvertSwiftSDK
import ConvertSynchronization
import ConvertTesting
import Foundation
import Testing

/// Two SDK processes on one storage directory: a forget made in one holds in the other, alive or
/// stopped, and across a restart of both; a manual exposure is sent once.
@Suite(.serialized)
struct SharedDirectoryTests {
    /// A `JournalProbe sdk` process, driven one command at a time.
    final class SDKProcess: @unchecked Sendable {
        let process = Process()
        private let input = Pipe()
        private let output = Pipe()
        private var buffered = ""

        init(directory: URL, server: String) throws {
            process.executableURL = BuiltProducts.executable("JournalProbe")
            process.arguments = ["sdk", directory.path, server]
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            let first = line()
            guard first == "ready" else { throw ProbeFailure(text: "probe did not start: \(first)") }
        }

        /// Sends `command`; returns its answer line.
        @discardableResult
        func send(_ command: String) -> String {
            input.fileHandleForWriting.write(Data((command + "\n").utf8))
            return line()
        }

        /// Shuts the SDK down and waits for the process to end.
        func exit() {
            _ = send("exit")
            process.waitUntilExit()
        }

        private func line() -> String {
            while !buffered.contains("\n") {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { return buffered }
                buffered += String(decoding: chunk, as: UTF8.self)
            }
            let end = buffered.firstIndex(of: "\n")!
            defer { buffered = String(buffered[buffered.index(after: end)...]) }
            return String(buffered[..<end])
        }

        deinit {
            if process.isRunning {
                process.terminate()
                process.waitUntilExit()
            }
        }
    }

    struct ProbeFailure: Error, CustomStringConvertible {
        let text: String
        var description: String { text }
    }

    /// A config and tracking server whose tracking answers 503 until `trackingUp`.
    final class Collector: Sendable {
        let server: LoopbackHTTPServer
        let trackingUp = Locked(false)
        let received = Locked<[(visitor: String, type: String)]>([])

        init() throws {
            let config = try Fixtures.data(.cdnConfigBaseline)
            let up = trackingUp, received = received
            server = try LoopbackHTTPServer { request in
                if request.method == "GET" { return configReply(config) }
                guard up.withValue({ $0 }) else { return .respond(status: 503) }
                if let batch = try? ReceivedBatch(request.body) {
                    received.withValue { $0 += batch.events.map { ($0.visitor, $0.type) } }
                }
                return .respond(status: 200)
            }
        }

        func events(of visitor: String) -> [String] {
            received.withValue { $0.filter { $0.visitor == visitor }.map(\.type) }
        }
    }

    /// Whether any file in `directory` holds `text`, as it is or inside a base64 field.
    static func anyFile(in directory: URL, holds text: String) throws -> [String] {
        var holders: [String] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            let data = try Data(contentsOf: directory.appendingPathComponent(name))
            let content = String(decoding: data, as: UTF8.self)
            let decoded = content.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap {
                Data(base64Encoded: String($0)).map { String(decoding: $0, as: UTF8.self) }
            }
            if content.contains(text) || decoded.contains(where: { $0.contains(text) }) { holders.append(name) }
        }
        return holders
    }

    @Test(arguments: [false, true])
    func aForgetInOneProcessHoldsInTheOtherAndAcrossARestart(otherExitedFirst: Bool) async throws {
        let collector = try Collector()
        defer { collector.server.stop() }
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let forgotten = "visitor-forgotten", kept = "visitor-kept"

        let a = try SDKProcess(directory: directory, server: collector.server.baseURL)
        let b = try SDKProcess(directory: directory, server: collector.server.baseURL)
        for visitor in [forgotten, kept] {
            #expect(b.send("decide \(visitor)").hasPrefix("variation 1"))
            #expect(b.send("convert \(visitor)") == "tracked(eventCount: 1)")
        }
        // Past the write-behind window: B's change log holds both visitors.
        try await Task.sleep(for: .milliseconds(300))
        #expect(try Self.anyFile(in: directory, holds: forgotten).count >= 2)
        if otherExitedFirst { b.exit() }
        #expect(a.send("forget \(forgotten)") == "forgot true")
        if otherExitedFirst {
            // Erased at the forget from every file, the stopped process's included.
            #expect(try Self.anyFile(in: directory, holds: forgotten) == [])
        } else {
            // The live process drops the visitor on its next call.
            try await Task.sleep(for: .milliseconds(150))
            #expect(b.send("data \(forgotten)") == "data bucketing=0 goals=")
            b.exit()
        }
        a.exit()
        #expect(try Self.anyFile(in: directory, holds: forgotten) == [])

        collector.trackingUp.withValue { $0 = true }
        let a2 = try SDKProcess(directory: directory, server: collector.server.baseURL)
        let b2 = try SDKProcess(directory: directory, server: collector.server.baseURL)
        for process in [a2, b2] {
            #expect(process.send("data \(forgotten)") == "data bucketing=0 goals=")
            #expect(process.send("data \(kept)").hasPrefix("data bucketing=1 goals="))
            #expect(process.send("flush") == "flushed true")
        }
        a2.exit()
        b2.exit()
        #expect(collector.events(of: forgotten) == [])
        #expect(collector.events(of: kept).sorted() == ["bucketing", "conversion"])
    }

    @Test func aForgetErasesTheVisitorsSentAndPendingEventsFromDiskAtOnce() async throws {
        let collector = try Collector()
        defer { collector.server.stop() }
        collector.trackingUp.withValue { $0 = true }
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let process = try SDKProcess(directory: directory, server: collector.server.baseURL)
        let visitor = "visitor-erased"
        #expect(process.send("decide \(visitor)").hasPrefix("variation 1"))
        #expect(process.send("convert \(visitor)") == "tracked(eventCount: 1)")
        #expect(process.send("flush") == "flushed true")
        collector.trackingUp.withValue { $0 = false }
        #expect(process.send("convert \(visitor)") == "duplicate")
        #expect(process.send("decide \(visitor)-2").hasPrefix("variation 1"))
        try await Task.sleep(for: .milliseconds(300))
        // Sent and acknowledged, yet its lines are still in the journal until a compaction.
        #expect(try Self.anyFile(in: directory, holds: visitor).contains("events.journal"))
        #expect(process.send("forget \(visitor)") == "forgot true")
        #expect(process.send("forget \(visitor)-2") == "forgot true")
        #expect(try Self.anyFile(in: directory, holds: visitor) == [])
        process.exit()
    }

    @Test func aManualExposureIsSentOnceByTwoProcesses() async throws {
        let collector = try Collector()
        defer { collector.server.stop() }
        collector.trackingUp.withValue { $0 = true }
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let a = try SDKProcess(directory: directory, server: collector.server.baseURL)
        let b = try SDKProcess(directory: directory, server: collector.server.baseURL)
        let visitor = "visitor-manual"
        let decided = a.send("manual \(visitor)")
        #expect(decided.hasPrefix("variation 1"))
        #expect(b.send("manual \(visitor)") == decided)
        #expect(a.send("expose \(visitor)") == "tracked")
        #expect(b.send("expose \(visitor)") == "alreadyTracked")
        #expect(a.send("expose \(visitor)") == "alreadyTracked")
        // Markers are the SDK's own: no goal is listed.
        #expect(b.send("data \(visitor)") == "data bucketing=1 goals=")
        #expect(a.send("flush") == "flushed true")
        #expect(b.send("flush") == "flushed true")
        a.exit()
        b.exit()
        #expect(collector.events(of: visitor) == ["bucketing"])
    }
}
