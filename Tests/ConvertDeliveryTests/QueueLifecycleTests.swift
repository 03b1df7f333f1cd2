import ConvertFileStorage
import ConvertQueue
import ConvertSwiftSDK
import ConvertTesting
import ConvertTransport
import ConvertURLSessionTransport
import ConvertSynchronization
import Foundation
import Testing

/// A queue on a loopback server, with a journal when a directory is given. The server answers or
/// drops the connection, so the answer deadline is long: on a starved machine a short one would
/// resend a batch the server already took.
private func queue(_ server: LoopbackHTTPServer, directory: URL? = nil, batchSize: Int = 5, capacity: Int = 100_000,
                   retry: RetryPolicy = RetryPolicy(initial: .milliseconds(20), maximum: .milliseconds(40)),
                   logs: RecordingLogSink = RecordingLogSink(), clock: any SleepClock = .continuous) throws -> TrackingQueue {
    TrackingQueue(
        transport: URLSessionTransport(postAnswerDeadline: .patience),
        endpoint: TrackingEndpoint(template: server.baseURL, sdkKey: "k", policy: EndpointPolicy(allowsInsecureHTTP: true)),
        options: TrackingQueueOptions(batchSize: batchSize, releaseInterval: .milliseconds(20), capacity: capacity,
                                      retry: retry, requestTimeout: .patience),
        journal: try directory.map { try FileEventJournal(directory: $0) }, log: SDKLog(sink: logs, minimum: .debug),
        clock: clock)
}

private func event(_ visitor: String, _ n: Int) -> TrackingEvent {
    TrackingEvent(accountId: "1", projectId: "2", visitorId: visitor, segments: nil,
                  payload: .conversion(goalId: "g\(n)", goalData: nil, bucketingData: nil))
}

/// Goal ids of every event the server received in requests answered 2xx by `accepted`.
private func goals(_ requests: [LoopbackHTTPServer.Request]) -> [String] {
    requests.flatMap { (try? ReceivedBatch($0.body))?.events.compactMap { $0.data["goalId"] as? String } ?? [] }
}

@Suite(.serialized) struct QueueLifecycleTests {
    @Test func shutdownDeliversTheBatchOnTheWireAndARestartSendsNothingAgain() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try LoopbackHTTPServer { _ in .delay(.milliseconds(200), then: .respond(status: 200)) }
        let first = try queue(server, directory: directory)
        for n in 0..<23 { first.enqueue(event("v\(n % 4)", n)) }
        let report = await first.shutdown(timeout: .patience)
        #expect(report.drained)
        #expect(report.delivered == 23)
        #expect(Set(goals(server.requests)) == Set((0..<23).map { "g\($0)" }))
        #expect(goals(server.requests).count == 23, "nothing twice")
        #expect(first.offer(event("late", 99)) == false, "a shut-down queue takes nothing")
        #expect(first.counters.dropped == 1)

        let requestsBefore = server.requests.count
        let second = try queue(server, directory: directory)
        #expect(await second.flush(timeout: .patience))
        #expect(second.counters.pending == 0)
        #expect(server.requests.count == requestsBefore, "the restart sends nothing again")
        _ = await second.shutdown(timeout: .seconds(5))
    }

    @Test func shutdownAgainstADeadServerKeepsEverythingForTheNextStart() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let failing = Locked(true)
        let server = try LoopbackHTTPServer { _ in failing.value ? .respond(status: 503) : .respond(status: 200) }
        let first = try queue(server, directory: directory)
        for n in 0..<12 { first.enqueue(event("v", n)) }
        let report = await first.shutdown(timeout: .milliseconds(300))
        #expect(!report.drained)
        #expect(report.leftPending == 12)
        #expect(report.delivered == 0)

        failing.set(false)
        let second = try queue(server, directory: directory)
        #expect(await second.flush(timeout: .patience))
        #expect(second.counters.sent == 12)
        #expect(Set(goals(server.requests.filter { _ in true })).isSuperset(of: (0..<12).map { "g\($0)" }))
        _ = await second.shutdown(timeout: .seconds(5))
    }

    @Test func flushReturnsOnlyOnceTheServerHasAnswered() async throws {
        let server = try LoopbackHTTPServer { _ in .delay(.milliseconds(300), then: .respond(status: 200)) }
        let queue = try queue(server)
        for n in 0..<7 { queue.enqueue(event("v", n)) }
        #expect(await queue.flush(timeout: .patience))
        #expect(queue.counters.sent == 7, "no request is left on the wire when flush returns")
        #expect(queue.counters.pending == 0)
        _ = await queue.shutdown(timeout: .seconds(5))
    }

    @Test func aFlushThatTimesOutStillRecordsTheOutcomeOfTheRequestOnTheWire() async throws {
        let server = try LoopbackHTTPServer { _ in .delay(.milliseconds(800), then: .respond(status: 200)) }
        let queue = try queue(server)
        for n in 0..<3 { queue.enqueue(event("v", n)) }
        #expect(await queue.flush(timeout: .milliseconds(100)) == false)
        try await eventually("the late answer is recorded") { queue.counters.sent == 3 }
        _ = await queue.shutdown(timeout: .seconds(5))
    }

    @Test func aReleasedSDKStopsItsDeliveryLoop() async throws {
        let config = try Fixtures.data(.cdnConfigBaseline)
        let server = try LoopbackHTTPServer { request in request.method == "GET" ? configReply(config) : .respond(status: 503) }
        var sdk: ConvertSwiftSDK? = ConvertSwiftSDK(configuration: loopbackConfiguration(server, persistence: .memory),
                                                    logSink: RecordingLogSink())
        try await sdk!.ready(timeout: .patience)
        let context = sdk!.createContext(visitorId: "released")
        #expect(await context.trackConversion("button-primary-click") == .tracked(eventCount: 1))
        try await eventually("a first attempt") { server.requests.contains { $0.method == "POST" } }
        weak let released = sdk
        sdk = nil
        #expect(released == nil)
        let posts = { server.requests.filter { $0.method == "POST" }.count }
        let settled = posts()
        try await Task.sleep(for: .milliseconds(1500))
        #expect(posts() <= settled + 1, "at most the attempt already under way; no retry loop lives on")
    }
}

@Suite(.serialized) struct ServerAnswerTests {
    @Test func aRefusedEventIsIsolatedAndEveryOtherEventDelivered() async throws {
        let logs = RecordingLogSink()
        let server = try LoopbackHTTPServer { request in
            let visitors = (try? ReceivedBatch(request.body))?.events.map(\.visitor) ?? []
            return visitors.contains("bad") ? .respond(status: 400) : .respond(status: 200)
        }
        let queue = try queue(server, batchSize: 10, logs: logs)
        let started = ContinuousClock.now
        for n in 0..<75 { queue.enqueue(event(n == 7 || n == 40 ? "bad" : "v\(n % 5)", n)) }
        #expect(await queue.flush(timeout: .patience))
        let elapsed = ContinuousClock.now - started
        let counters = queue.counters
        #expect(counters.sent == 73)
        #expect(counters.rejected == 2)
        #expect(counters.pending == 0)
        #expect(counters.enqueued == counters.sent + counters.dropped + counters.rejected + counters.pending)
        let accepted = goals(server.requests.filter { (try? ReceivedBatch($0.body))?.events.contains { $0.visitor == "bad" } == false })
        #expect(Set(accepted) == Set((0..<75).filter { $0 != 7 && $0 != 40 }.map { "g\($0)" }))
        // Refusals are logged at most once per 10 s: one line here, unless a starved run (the
        // thread sanitizer on a loaded machine) spread them over more than 10 s.
        let refusedLines = logs.messages.filter { $0.contains("refused") }.count
        #expect(elapsed >= .seconds(10) ? refusedLines <= 2 : refusedLines == 1, "one log line, not one per event")
        _ = await queue.shutdown(timeout: .seconds(5))
    }

    @Test func aRefusalStormIsAnOutageEveryEventIsKeptAndRequestsStayFew() async throws {
        let storming = Locked(true)
        let server = try LoopbackHTTPServer { _ in storming.value ? .respond(status: 400) : .respond(status: 200) }
        let queue = try queue(server, batchSize: 10, retry: RetryPolicy(initial: .milliseconds(50), maximum: .milliseconds(400)))
        for n in 0..<300 { queue.enqueue(event("v\(n % 30)", n)) }
        try await Task.sleep(for: .seconds(2))
        let duringStorm = server.requests.count
        #expect(queue.counters.rejected == 0, "no event is given up while every event is refused")
        storming.set(false)
        #expect(await queue.flush(timeout: .patience))
        let counters = queue.counters
        #expect(counters.sent == 300 && counters.rejected == 0)
        let delivered = goals(server.requests.suffix(server.requests.count - duringStorm))
        #expect(Set(delivered) == Set((0..<300).map { "g\($0)" }))
        // Splitting to single events, then backing off: far fewer requests than one per event.
        #expect(duringStorm < 150, "\(duringStorm) requests during 2 s of refusals")
        _ = await queue.shutdown(timeout: .seconds(5))
    }

    @Test func aPoisonedVisitorAmongOthersDuringAStormLosesOnlyItsOwnEvents() async throws {
        let storming = Locked(true)
        let server = try LoopbackHTTPServer { request in
            let visitors = (try? ReceivedBatch(request.body))?.events.map(\.visitor) ?? []
            return storming.value || visitors.contains("bad") ? .respond(status: 400) : .respond(status: 200)
        }
        let queue = try queue(server, batchSize: 10, retry: RetryPolicy(initial: .milliseconds(50), maximum: .milliseconds(200)))
        for n in 0..<60 { queue.enqueue(event(n % 10 == 3 ? "bad" : "v\(n % 7)", n)) }
        try await Task.sleep(for: .seconds(1))
        storming.set(false)
        #expect(await queue.flush(timeout: .patience))
        let counters = queue.counters
        #expect(counters.rejected == 6, "the six events of the poisoned visitor, and only those")
        #expect(counters.sent == 54)
        _ = await queue.shutdown(timeout: .seconds(5))
    }

    @Test func aRetriedBatchIsResentAsItWasNeverJoinedByLaterEvents() async throws {
        let failures = Counter()
        let server = try LoopbackHTTPServer { _ in
            failures.increment()
            return failures.value <= 3 ? .respond(status: 503) : .respond(status: 200)
        }
        let queue = try queue(server, batchSize: 4)
        for n in 0..<4 { queue.enqueue(event("v", n)) }
        try await eventually("the first failure") { queue.counters.failedRequests == 1 }
        for n in 4..<40 { queue.enqueue(event("v", n)) }
        #expect(await queue.flush(timeout: .patience))
        #expect(queue.counters.sent == 40)
        let failed = goals([server.requests[0]])
        #expect(failed == ["g0", "g1", "g2", "g3"])
        for retry in server.requests[1...3] {
            #expect(goals([retry]) == failed, "each retry resends exactly the failed batch")
        }
        #expect(Set(goals(Array(server.requests.dropFirst(3)))) == Set((0..<40).map { "g\($0)" }))
        #expect(goals(Array(server.requests.dropFirst(3))).count == 40, "nothing twice after the success")
        _ = await queue.shutdown(timeout: .seconds(5))
    }

    @Test func newEventsDoNotCutABackoffShortAndAttemptsCountFailuresOnly() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 503) }
        // A backoff of at least 30 s: nothing but a flush can end it within the test.
        let queue = try queue(server, batchSize: 1, retry: RetryPolicy(initial: .seconds(60), maximum: .seconds(60)))
        queue.enqueue(event("v", 0))
        try await eventually("the first failure") { queue.counters.failedRequests == 1 }
        for n in 1...30 {
            queue.enqueue(event("v", n))
            try await Task.sleep(for: .milliseconds(5))
        }
        try await Task.sleep(for: .milliseconds(200))
        #expect(server.requests.count == 1, "the 30 new events waited behind the backoff")
        #expect(queue.counters.failedRequests == 1)
        #expect(await queue.flush(timeout: .milliseconds(100)) == false, "nothing can be acknowledged")
        try await eventually("the flush's one early attempt") { server.requests.count == 2 }
        try await Task.sleep(for: .milliseconds(200))
        #expect(server.requests.count == 2, "a flush cuts a backoff short once, not every one after it")
        #expect(queue.counters.failedRequests == 2)
        queue.stop()
    }

    @Test func tooManyRequestsIsRetriedAfterRetryAfter() async throws {
        let answered = Counter()
        let server = try LoopbackHTTPServer { _ in
            answered.increment()
            return answered.value == 1 ? .respond(status: 429, headers: ["Retry-After": "1"]) : .respond(status: 200)
        }
        let clock = ManualClock()
        let queue = try queue(server, retry: RetryPolicy(initial: .milliseconds(20), maximum: .seconds(5)), clock: clock)
        queue.enqueue(event("v", 0))
        try await clock.waitForSleepers()
        clock.advance(by: .milliseconds(20))
        try await eventually("the 429") { queue.counters.failedRequests == 1 }
        try await clock.waitForSleepers()
        #expect(clock.deadlines == [.milliseconds(1020)], "the server's Retry-After (1 s) outweighs the 20 ms backoff")
        clock.advance(by: .milliseconds(999))
        try await Task.sleep(for: .milliseconds(50))
        #expect(server.requests.count == 1, "no retry before the Retry-After has passed")
        clock.advance(by: .milliseconds(1))
        try await eventually("the retry") { queue.counters.sent == 1 }
        #expect(queue.counters.rejected == 0)
        #expect(server.requests.count == 2)
        _ = await queue.shutdown(timeout: .seconds(5))
    }

    @Test func aDroppedConnectionFailsAtOnceAndIsNotSentAgainByTheTransport() async throws {
        let server = try LoopbackHTTPServer(keepsConnectionsAlive: true) { request in
            String(decoding: request.body, as: UTF8.self) == "two" ? .drop : .respond(status: 200)
        }
        // No answer deadline to fall back on: only noticing the drop itself ends the request early.
        let transport = URLSessionTransport(postAnswerDeadline: .patience)
        let url = try #require(URL(string: server.baseURL + "/track"))
        _ = try await transport.send(HTTPRequest(method: .post, url: url, body: Data("one".utf8), timeout: .seconds(120)))
        let start = ContinuousClock.now
        await #expect(throws: TransportError.self) {
            _ = try await transport.send(HTTPRequest(method: .post, url: url, body: Data("two".utf8), timeout: .seconds(120)))
        }
        // Bounds far from both deadlines, so a starved machine cannot blur them.
        #expect(ContinuousClock.now - start < .seconds(60), "noticed long before the 120 s request timeout")
        #expect(server.requests.filter { String(decoding: $0.body, as: UTF8.self) == "two" }.count == 1)
        #expect(server.requests.allSatisfy { $0.header("Connection")?.lowercased() == "close" })
    }

    @Test func anUnansweredPostCountsAsADeadConnectionWithinTheDeadline() async throws {
        let server = try LoopbackHTTPServer { _ in .delay(.seconds(90), then: .respond(status: 200)) }
        let transport = URLSessionTransport()
        let url = try #require(URL(string: server.baseURL + "/track"))
        let start = ContinuousClock.now
        await #expect(throws: TransportError.self) {
            _ = try await transport.send(HTTPRequest(method: .post, url: url, body: Data("x".utf8), timeout: .seconds(120)))
        }
        #expect(ContinuousClock.now - start < .seconds(60),
                "given up near the 2 s answer deadline, not at the 90 s answer or the 120 s timeout")
    }

    @Test func conversionsSayWhenTheirEventsWereDropped() async throws {
        let config = try Fixtures.data(.cdnConfigBaseline)
        let logs = RecordingLogSink()
        let server = try LoopbackHTTPServer { request in request.method == "GET" ? configReply(config) : .respond(status: 503) }
        var configuration = loopbackConfiguration(server, persistence: .memory)
        configuration.eventQueueCapacity = 1
        let sdk = ConvertSwiftSDK(configuration: configuration, logSink: logs)
        try await sdk.ready(timeout: .patience)
        #expect(await sdk.createContext(visitorId: "first").trackConversion("button-primary-click") == .tracked(eventCount: 1))
        let started = ContinuousClock.now
        for n in 0..<20 {
            #expect(await sdk.createContext(visitorId: "later-\(n)").trackConversion("button-primary-click") == .dropped(eventCount: 1))
        }
        #expect(sdk.trackingCounters.dropped == 20)
        let dropLines = logs.messages.filter { $0.contains("dropped") }.count
        // One line, unless a starved run (the thread sanitizer on a loaded machine) took over 10 s.
        #expect(ContinuousClock.now - started >= .seconds(10) ? dropLines <= 3 : dropLines == 1,
                "drops are logged at most every 10 s")
        _ = await sdk.shutdown(timeout: .milliseconds(100))
    }
}
