import ConvertFileStorage
import ConvertQueue
import ConvertSwiftSDK
import ConvertTesting
import ConvertTransport
import ConvertURLSessionTransport
import ConvertSynchronization
import Foundation
import Testing

/// Two processes journaling on one directory, each killed with SIGKILL and restarted several
/// times while the other keeps running, against a server that fails 30 % of requests: no
/// acknowledged event is lost, and a kill repeats at most the one batch it had in flight.
@Suite(.serialized) struct FileStorageTwoProcessTests {
    @Test func twoProcessesKilledRepeatedlyLoseNothingAndRepeatAtMostABatchPerKill() async throws {
        _ = try #require(BuiltProducts.executable("JournalProbe"), "the JournalProbe helper is built with the tests")
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let started = ContinuousClock.now
        let received = Locked<[String: Int]>([:])
        let server = try LoopbackHTTPServer { request in
            // Failures before the body is used: the client retries, the server has seen nothing.
            if Int.random(in: 0..<100) < 30 { return Bool.random() ? .respond(status: 500) : .drop }
            if let batch = try? ReceivedBatch(request.body) {
                received.withValue { counts in
                    for event in batch.events { if let goal = event.data["goalId"] as? String { counts[goal, default: 0] += 1 } }
                }
            }
            return .respond(status: 200)
        }
        // The probes are driven from a thread of their own: waiting on them blocks.
        let (acknowledged, roles, kills, short) = try await offThePool { () throws -> ([String], [String], Int, [String]) in
            var acknowledged: [String] = []
            var roles: [String] = []
            var short: [String] = []
            var kills = 0
            func stop(_ probe: ProbeProcess) {
                let (goals, role) = probe.kill()
                if goals.count <= 50 { short.append(probe.run) }
                acknowledged += goals
                if let role { roles.append(role) }
                kills += 1
            }
            let rounds = 3
            var a = try ProbeProcess(directory: directory, run: "a0", server: server.baseURL)
            var b = try ProbeProcess(directory: directory, run: "b0", server: server.baseURL)
            for round in 1...rounds {
                a.waitForAck(Int.random(in: 100...400))
                stop(a)
                a = try ProbeProcess(directory: directory, run: "a\(round)", server: server.baseURL)
                b.waitForAck(Int.random(in: 100...400))
                stop(b)
                b = try ProbeProcess(directory: directory, run: "b\(round)", server: server.baseURL)
            }
            a.waitForAck(Int.random(in: 100...400))
            b.waitForAck(Int.random(in: 100...400))
            stop(a)
            stop(b)
            return (acknowledged, roles, kills, short)
        }
        #expect(short.isEmpty, "runs \(short) acknowledged 50 events or fewer before their kill")
        #expect(roles.contains("owner") && roles.contains("writer"), "both roles were exercised: \(roles)")

        let journal = try FileEventJournal(directory: directory)
        let queue = TrackingQueue(
            transport: URLSessionTransport(),
            endpoint: TrackingEndpoint(template: server.baseURL, sdkKey: "probe", policy: EndpointPolicy(allowsInsecureHTTP: true)),
            options: TrackingQueueOptions(batchSize: 20, releaseInterval: .milliseconds(10), maximumBatchEvents: 20,
                                          retry: RetryPolicy(initial: .milliseconds(5), maximum: .milliseconds(50))),
            journal: journal)
        try await eventually("every journaled event delivered", timeout: .patience) { queue.counters.pending == 0 }
        #expect(try journal.pending().isEmpty)
        #expect(fileNames(in: directory, prefix: "events.journal.").filter { $0 != "events.journal.lock" }.isEmpty,
                "the stopped writers' journals were taken over and removed")

        let counts = received.value
        let lost = acknowledged.filter { counts[$0] == nil }
        let duplicates = counts.values.reduce(0) { $0 + max(0, $1 - 1) }
        #expect(acknowledged.count > 500)
        #expect(lost.isEmpty, "\(lost.count) of \(acknowledged.count) acknowledged events lost: \(lost.prefix(5))")
        #expect(duplicates <= kills * 20, "\(duplicates) duplicates after \(kills) kills")
        print("two processes on one directory: \(acknowledged.count) acknowledged events, \(counts.count) delivered, "
            + "\(kills) kills, \(duplicates) duplicates, \(lost.count) lost, \(ContinuousClock.now - started)")
    }
}

/// A process that exits right after its enqueues, with no flush, against a server answering at
/// once: after a restart on the same directory, every event arrives, and no more than the one
/// request that was on the wire at the exit arrives twice.
@Suite(.serialized) struct ExitWithoutFlushTests {
    @Test(arguments: [53, 200, 1_000])
    func anExitRightAfterEnqueuingRepeatsAtMostOneRequest(events: Int) async throws {
        let probe = try #require(BuiltProducts.executable("JournalProbe"), "the JournalProbe helper is built with the tests")
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let received = Locked<[String: Int]>([:])
        let largestRequest = Locked(0)
        let server = try LoopbackHTTPServer { request in
            if let batch = try? ReceivedBatch(request.body) {
                largestRequest.withValue { $0 = max($0, batch.events.count) }
                received.withValue { counts in
                    for event in batch.events { if let goal = event.data["goalId"] as? String { counts[goal, default: 0] += 1 } }
                }
            }
            return .respond(status: 200)
        }
        try await offThePool {
            for arguments in [[directory.path, "\(events)", "x", server.baseURL, "exit"]] {
                let process = Process()
                process.executableURL = probe
                process.arguments = arguments
                process.standardOutput = FileHandle.nullDevice
                try process.run()
                process.waitUntilExit()
            }
        }
        // The requests before the exit: a backlog goes out in requests of up to 500 events.
        let onTheWire = largestRequest.value
        // The restart: a queue on the same directory delivers what the journal still holds.
        let journal = try FileEventJournal(directory: directory)
        let queue = TrackingQueue(transport: URLSessionTransport(),
                                  endpoint: TrackingEndpoint(template: server.baseURL, sdkKey: "probe",
                                                             policy: EndpointPolicy(allowsInsecureHTTP: true)),
                                  options: TrackingQueueOptions(batchSize: 10, releaseInterval: .milliseconds(10)),
                                  journal: journal)
        #expect(await queue.flush(timeout: .patience))
        _ = await queue.shutdown(timeout: .seconds(5))
        let counts = received.value
        let goals = (0..<events).map { "goal-x-\($0)" }
        #expect(goals.allSatisfy { counts[$0] != nil }, "lost: \(goals.filter { counts[$0] == nil })")
        let repeated = counts.values.reduce(0) { $0 + $1 - 1 }
        #expect(repeated <= max(10, onTheWire), "\(repeated) events arrived twice (largest request \(onTheWire))")
    }
}
