import ConvertCore
import ConvertEnvironment
import ConvertJSON
import ConvertMemory
import ConvertRedis
import ConvertSharedStore
import ConvertStorage
import ConvertSynchronization
import ConvertTesting
import ConvertTracking
import Foundation
import Testing

/// Requests running on a shared store while Redis is killed, paused or restarted, or a cluster
/// fails over: what each request answered and how long each SDK call took.
final class Traffic: Sendable {
    struct Tally: Sendable {
        var requests = 0
        var unanswered = 0
        /// The slowest SDK call (a load, a decision or a conversion), and where.
        var slowest: Duration = .zero
        var slowestAt = ""
        /// The slowest request (load, decision and, now and then, a conversion).
        var slowestRequest: Duration = .zero
        /// Visitors decided while their load failed, with the variation answered.
        var decidedAlone: [String: String] = [:]
        /// Visitors answered before the fault, with the variation answered.
        var before: [String: String] = [:]
        /// Conversions answered "tracked" (events queued), in all and from the fault on.
        var tracked = 0, trackedFromFault = 0
        /// The visitor of each conversion answered "tracked", and the conversions answered
        /// neither "tracked" nor "duplicate".
        var trackedVisitors: [String] = [], conversionsFailed = 0
        /// Each visitor's first answer, and the requests answered another variation than it.
        var answered: [String: String] = [:], split = 0
    }

    /// Every this many requests, one tracks a conversion.
    let conversionEvery: Int
    let tally = Locked(Tally())
    private let running = Locked(true)
    private let phase = Locked("before")

    init(conversionEvery: Int = 10) { self.conversionEvery = max(1, conversionEvery) }

    func enter(_ name: String) { phase.set(name) }
    func stop() { running.set(false) }
    var isRunning: Bool { running.value }

    /// `tasks` loops of requests until ``stop()``, each on a thread of its own (a server's
    /// request threads): new visitors and returning ones, a conversion now and then.
    func run(_ instance: ClaimingInstance, tasks: Int) async {
        let threads = (0..<tasks).map { ThreadExecutor(name: "traffic-\($0)") }
        defer { threads.forEach { $0.stop() } }
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                group.addTask(executorPreference: threads[task]) {
                    var n = 0
                    while self.isRunning {
                        n += 1
                        let visitor = n % 3 == 0 ? "t\(task)-\(n / 2)" : "t\(task)-\(n)"
                        let phase = self.phase.value
                        let start = ContinuousClock.now
                        let context = await instance.sdk.loadContext(visitorId: visitor, attributes: ["desktop": true, "browser": "FF"])
                        let loaded = ContinuousClock.now
                        context.setLocationProperties(["location": "pricing"])
                        let variation = context.variation(forExperience: "test-experience-ab-fullstack-1")?.id
                        let decided = ContinuousClock.now
                        var conversion: ConversionResult?
                        if n % self.conversionEvery == 0 { conversion = await context.trackConversion("button-primary-click") }
                        let end = ContinuousClock.now
                        let calls = [("load", loaded - start), ("decision", decided - loaded), ("conversion", end - decided)]
                        self.tally.withValue { tally in
                            tally.requests += 1
                            if variation == nil { tally.unanswered += 1 }
                            for (call, elapsed) in calls where elapsed > tally.slowest {
                                tally.slowest = elapsed
                                tally.slowestAt = "\(call), \(phase)"
                            }
                            tally.slowestRequest = max(tally.slowestRequest, end - start)
                            switch conversion {
                            case .tracked(let events)?:
                                tally.tracked += events
                                tally.trackedVisitors.append(visitor)
                                if phase != "before" { tally.trackedFromFault += events }
                            case .duplicate?, nil: break
                            default: tally.conversionsFailed += 1
                            }
                            if let variation {
                                if let first = tally.answered[visitor] {
                                    if first != variation { tally.split += 1 }
                                } else {
                                    tally.answered[visitor] = variation
                                }
                                if case .failed = context.visitorDataLoad { tally.decidedAlone[visitor] = variation }
                                if phase == "before" { tally.before[visitor] = variation }
                            }
                        }
                        // A server's pace, not a spin: leaves the machine to the rest of the suite.
                        try? await Task.sleep(for: .microseconds(500))
                    }
                }
            }
        }
    }
}

/// How many threads this process runs.
private func threadCount() -> Int {
    ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []).count
}

/// The names of this process's threads that `client` started (`Redis.io.N`, `Redis.cn.N`).
private func threads(of client: RedisClient) -> [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
        .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        .filter { $0.hasPrefix("Redis.") && $0.hasSuffix(".\(client.threadNumber)") }
}

/// Redis killed, paused and restarted under a client that keeps serving requests: no call
/// fails, none (a load, a decision, a conversion: one Redis call each at most) waits longer than
/// the call bound (250 ms) plus 50 ms, the outage is logged once with its end, the client
/// reconnects by itself, and what was decided meanwhile reaches Redis.
@Suite(.enabled(if: RedisServer.isAvailable, "redis-server is not installed (looked in PATH, /usr/bin, /usr/sbin)"),
       .serialized, .timeLimit(.minutes(10)))
struct RedisOutageTests {
    /// The bound every Redis call keeps (the default `commandTimeout`) and the slack allowed on
    /// top of it for scheduling on a busy machine.
    static let bound = RedisConfiguration().commandTimeout
    static let slack: Duration = .milliseconds(50)

    enum Fault { case kill, pause, restart }

    /// Runs traffic, applies `fault`, waits for recovery, and checks the promises.
    func check(_ fault: Fault) async throws {
        let server = try await RedisServer.started()
        var configuration = server.configuration(keyPrefix: "outage:")
        configuration.commandTimeout = Self.bound
        configuration.reconnectBackoffInitial = .milliseconds(50)
        configuration.reconnectBackoffMax = .milliseconds(400)
        let client = RedisClient(configuration: configuration)
        defer { client.close() }
        let instance = try await ClaimingInstance(client, config: try Fixtures.data(.cdnConfigBaseline))
        let traffic = Traffic()
        let connectionsBefore = try server.info("total_connections_received") ?? 0

        var faultLasted: Duration = .zero
        var redisThreadsDuringFault: [String] = []
        var processThreads = (before: 0, during: 0)
        async let load: Void = traffic.run(instance, tasks: 4)
        try await Task.sleep(for: .milliseconds(400))
        processThreads.before = threadCount()
        traffic.enter("fault")
        let faultStart = ContinuousClock.now
        switch fault {
        case .kill:
            server.kill()
            try await Task.sleep(for: .seconds(1))
            redisThreadsDuringFault = threads(of: client)
            processThreads.during = threadCount()
            try await startAgain(server)
        case .pause:
            server.pause()
            try await Task.sleep(for: .milliseconds(1_500))
            redisThreadsDuringFault = threads(of: client)
            processThreads.during = threadCount()
            server.resume()
        case .restart:
            server.stop()
            redisThreadsDuringFault = threads(of: client)
            processThreads.during = threadCount()
            try await startAgain(server)
        }
        faultLasted = ContinuousClock.now - faultStart
        traffic.enter("recovery")
        let back = ContinuousClock.now
        _ = await eventually { client.isAvailable }
        let reconnectedIn = ContinuousClock.now - back
        let recovered = await eventually { client.isAvailable && instance.store.counters.pending < 50 }
        traffic.enter("after")
        try await Task.sleep(for: .milliseconds(400))
        traffic.stop()
        await load
        let tally = traffic.tally.value

        // No call failed, none waited past the bound (each SDK call makes one Redis call at most).
        #expect(tally.requests > 20, "traffic ran: \(tally.requests) requests")
        #expect(tally.unanswered == 0, "\(tally.unanswered) of \(tally.requests) requests answered nothing")
        if !underThreadSanitizer {
            #expect(tally.slowest <= Self.bound + Self.slack,
                    "the slowest call took \(tally.slowest) (\(tally.slowestAt)); the bound is \(Self.bound) + \(Self.slack)")
        }
        print("RedisOutageTests \(fault): \(tally.requests) requests, slowest call \(tally.slowest) (\(tally.slowestAt)), "
            + "slowest request \(tally.slowestRequest), reconnected \(reconnectedIn) after the server was back, "
            + "fault \(faultLasted), store \(instance.store.counters), \(instance.logs.messages.filter { $0.contains("lost") })")

        // Recovered by itself, without a new client.
        #expect(recovered, "the client reconnected and the pending writes drained: \(instance.store.counters)")
        #expect(client.isAvailable)
        // Flushed until nothing is pending: on a machine the rest of the suite keeps busy a write
        // may still miss its bound and be retried.
        // The pending count drops as a batch is taken, before its write lands: wait for both, and
        // for a server that came back empty to have been noticed (its visitors marked again).
        if fault != .pause { _ = await eventually { instance.store.counters.rewrittenAfterDataLoss > 0 } }
        let drained = await eventually { instance.store.counters.pending == 0 && instance.store.writesInFlight == 0 }
        _ = await instance.store.flush()
        _ = await eventually { instance.store.counters.pending == 0 && instance.store.writesInFlight == 0 }
        #expect(drained || instance.store.counters.pending == 0, "\(instance.store.counters)")

        // What was decided while Redis could not be read is in Redis now.
        #expect(!tally.decidedAlone.isEmpty || fault == .restart, "some visitors were decided without Redis")
        // Read back through a client of the test's own, with a bound the busiest machine keeps.
        var checking = configuration
        checking.commandTimeout = .seconds(10)
        let checker = RedisClient(configuration: checking)
        defer { checker.close() }
        let backend = RedisVisitorBackend(client: checker)
        var missing: [String] = []
        for (visitor, variation) in tally.decidedAlone {
            let stored = try await backend.load(VisitorKey(namespace: "10035569-10034190", visitorId: visitor))
            if stored?.variationId(forExperienceId: "100334665") == nil || stored == nil { missing.append("\(visitor)=\(variation)") }
        }
        #expect(missing.isEmpty, "decided during the outage, not written after it: \(missing.prefix(5)) of \(missing.count)")

        // A server that came back empty got the visitors seen before written again.
        if fault != .pause {
            #expect(instance.store.counters.rewrittenAfterDataLoss > 0, "\(instance.store.counters)")
            var lost = 0
            for visitor in tally.before.keys.sorted().prefix(200) {
                let stored = try await backend.load(VisitorKey(namespace: "10035569-10034190", visitorId: visitor))
                if stored?.variationId(forExperienceId: "100334665") == nil { lost += 1 }
            }
            #expect(lost == 0, "\(lost) visitors decided before the restart are not in the new server")
        } else {
            #expect(instance.store.counters.rewrittenAfterDataLoss == 0, "a paused server lost nothing")
        }

        // Every conversion answered "tracked", during the outage too, was queued once: the sink
        // holds exactly those, and no visitor converted twice on the goal.
        let conversions = instance.sink.events.filter { $0.eventType == "conversion" }
        #expect(tally.trackedFromFault > 0, "conversions were tracked during the fault")
        #expect(conversions.count == tally.tracked, "\(tally.tracked) answered tracked, \(conversions.count) sent")
        #expect(Set(conversions.map(\.visitorId)).count == conversions.count, "a visitor's conversion sent twice")
        print("RedisOutageTests \(fault): conversions answered tracked \(tally.tracked) (\(tally.trackedFromFault) from the fault on), "
            + "sent \(conversions.count)")

        // The outage logged once, and its end.
        let lines = instance.logs.messages
        #expect(lines.filter { $0.contains("unreachable (") }.count == 1, "\(lines.filter { $0.contains("reachable") })")
        #expect(lines.filter { $0.contains("reachable again after") }.count == 1, "\(lines.filter { $0.contains("reachable") })")

        // Threads and connections did not pile up.
        #expect(redisThreadsDuringFault.count <= 2, "the client's threads: \(redisThreadsDuringFault)")
        let opened = (try server.info("total_connections_received") ?? 0) - connectionsBefore
        print("RedisOutageTests \(fault): client threads during the fault \(redisThreadsDuringFault) (process: "
            + "\(processThreads.before) before, \(processThreads.during) during), "
            + "connections opened \(opened) (pool \(configuration.poolSize))")
        if fault == .pause {
            // The pool's connections, the probes (one per backoff: 50, 100, 200, 400, 400… ms) and
            // this test's own INFO connections.
            #expect(opened <= 16, "\(opened) connections opened across the pause")
        }
        // The pool's, the checking client's and the INFO's own.
        let clients = try server.info("connected_clients") ?? 0
        #expect(clients <= configuration.poolSize + 2, "\(clients) connections open after recovery")
    }

    private func startAgain(_ server: RedisServer) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            Thread { continuation.resume(with: Result { try server.start() }) }.start()
        }
    }

    @Test func killedUnderLoad() async throws { try await check(.kill) }

    @Test func pausedUnderLoad() async throws { try await check(.pause) }

    @Test func restartedUnderLoad() async throws { try await check(.restart) }
}
