import ConvertFileStorage
import ConvertQueue
import ConvertSwiftSDK
import ConvertTesting
import ConvertTransport
import ConvertURLSessionTransport
import ConvertSynchronization
import Foundation
import Testing

/// Ten SIGKILLs of a process that journals and delivers events to a failing server: every
/// event whose enqueue returned is delivered in the end.
@Suite(.serialized) struct RestartTests {
    @Test func tenKillsLoseNoAcknowledgedEvent() async throws {
        let probe = try #require(BuiltProducts.executable("JournalProbe"))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("restarts-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let received = Locked<Set<String>>([])
        let server = try LoopbackHTTPServer { request in
            if Int.random(in: 0..<100) < 30 { return Bool.random() ? .respond(status: 500) : .drop }
            if let batch = try? JSONDecoder().decode(TrackingBatch.self, from: request.body) {
                var goals: [String] = []
                for visitor in batch.visitors {
                    for case .conversion(let goal, _, _) in visitor.events { goals.append(goal) }
                }
                received.set(received.value.union(goals))
            }
            return .respond(status: 200)
        }
        var acknowledged: [String] = []
        for run in 1...10 {
            let process = Process()
            process.executableURL = probe
            process.arguments = [directory.path, "100000", "\(run)", server.baseURL]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let target = Int.random(in: 100...400)
            var text = ""
            while !text.contains("ack \(target)\n") {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                text += String(decoding: chunk, as: UTF8.self)
            }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            text += String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
            let acks = text.split(separator: "\n").compactMap { $0.hasPrefix("ack ") ? Int($0.dropFirst(4)) : nil }
            #expect(acks.count > target, "run \(run) acknowledged events before the kill")
            acknowledged += acks.map { "goal-\(run)-\($0)" }
        }
        let queue = TrackingQueue(
            transport: URLSessionTransport(),
            endpoint: TrackingEndpoint(template: server.baseURL, sdkKey: "probe", policy: EndpointPolicy(allowsInsecureHTTP: true)),
            options: TrackingQueueOptions(batchSize: 100, releaseInterval: .milliseconds(10),
                                          retry: RetryPolicy(initial: .milliseconds(5), maximum: .milliseconds(50))),
            journal: try FileEventJournal(directory: directory))
        let deadline = ContinuousClock.now + .patience
        while queue.counters.pending > 0 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let delivered = received.value
        let lost = acknowledged.filter { !delivered.contains($0) }
        #expect(lost.isEmpty, "\(lost.count) of \(acknowledged.count) acknowledged events lost: \(lost.prefix(5))")
        #expect(acknowledged.count > 1000)
    }
}
