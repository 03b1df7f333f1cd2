import ConvertConfigLoader
import ConvertMemory
import ConvertQueue
import ConvertSwiftSDK
import ConvertTesting
import ConvertTransport
import ConvertSynchronization
import Foundation
import Testing

// Time in these tests is a `ManualClock`: intervals of seconds or minutes pass when the test
// advances the clock, and the only real waiting is brief polling for the code under test to act.

private let endpoint = TrackingEndpoint(template: "https://track.example/[project_id]/v1", sdkKey: "k")

private func trackingQueue(_ transport: StubTransport, clock: ManualClock, batchSize: Int = 10,
                           releaseInterval: Duration = .seconds(60), maximumBatchEvents: Int = 500,
                           minimumRequestInterval: Duration = .zero, capacity: Int = 100_000,
                           retry: RetryPolicy = RetryPolicy(), logs: RecordingLogSink = RecordingLogSink()) -> TrackingQueue {
    TrackingQueue(transport: transport, endpoint: endpoint,
                  options: TrackingQueueOptions(batchSize: batchSize, releaseInterval: releaseInterval,
                                                maximumBatchEvents: maximumBatchEvents,
                                                minimumRequestInterval: minimumRequestInterval, capacity: capacity,
                                                retry: retry),
                  log: SDKLog(sink: logs, minimum: .debug), clock: clock)
}

private func event(_ n: Int) -> TrackingEvent {
    TrackingEvent(accountId: "1", projectId: "2", visitorId: "v", segments: nil,
                  payload: .conversion(goalId: "g\(n)", goalData: nil, bucketingData: nil))
}

/// Goal ids in one request's body, in order.
private func goals(_ request: HTTPRequest) -> [String] {
    (try? ReceivedBatch(request.body ?? Data()))?.events.compactMap { $0.data["goalId"] as? String } ?? []
}

@Suite struct ClockDrivenQueueTests {
    @Test func aPartialBatchIsReleasedOnlyWhenTheClockPassesTheReleaseInterval() async throws {
        let clock = ManualClock()
        let transport = StubTransport { _ in HTTPResponse(status: 200) }
        let queue = trackingQueue(transport, clock: clock)
        defer { queue.stop() }
        for n in 0..<3 { queue.enqueue(event(n)) }
        try await clock.waitForSleepers()
        #expect(clock.deadlines == [.seconds(60)], "the release is due 60 s after the first event")
        clock.advance(by: .seconds(59))
        await letTasksRun()
        #expect(transport.requests.isEmpty, "59 s into a 60 s release interval nothing is sent")
        #expect(clock.deadlines == [.seconds(60)])
        clock.advance(by: .seconds(1))
        try await eventually("the release at 60 s") { queue.counters.sent == 3 }
        #expect(transport.requests.map(goals) == [["g0", "g1", "g2"]])

        // The interval counts from the first event of the next batch, not from the last release.
        clock.advance(by: .seconds(30))
        queue.enqueue(event(3))
        try await clock.waitForSleepers()
        #expect(clock.deadlines == [.seconds(150)])
        clock.advance(to: .seconds(149))
        await letTasksRun()
        #expect(transport.requests.count == 1)
        clock.advance(to: .seconds(150))
        try await eventually("the second release") { queue.counters.sent == 4 }

        // A full batch does not wait for the clock at all.
        for n in 4..<14 { queue.enqueue(event(n)) }
        try await eventually("a full batch at once") { queue.counters.sent == 14 }
        #expect(clock.elapsed == .seconds(150))
        #expect(transport.requests.count == 3)
    }

    @Test func underALoadRequestsArePacedAndCarryWhatGatheredMeanwhile() async throws {
        let clock = ManualClock()
        let transport = StubTransport { _ in HTTPResponse(status: 200) }
        let queue = trackingQueue(transport, clock: clock, maximumBatchEvents: 40, minimumRequestInterval: .milliseconds(50))
        defer { queue.stop() }
        // The first full batch goes at once: no request began within the interval.
        for n in 0..<10 { queue.enqueue(event(n)) }
        try await eventually("the first batch at once") { queue.counters.sent == 10 }
        // The next full batch, and what follows it, wait for the interval and go as one request.
        for n in 10..<35 { queue.enqueue(event(n)) }
        try await clock.waitForSleepers()
        #expect(clock.deadlines == [.milliseconds(50)], "the next request 50 ms after the first began")
        clock.advance(by: .milliseconds(49))
        await letTasksRun()
        #expect(transport.requests.count == 1, "25 events wait out the interval")
        clock.advance(by: .milliseconds(1))
        try await eventually("the paced request") { queue.counters.sent == 35 }
        #expect(transport.requests.map(goals).last == (10..<35).map { "g\($0)" })
        // A full request's worth does not wait for the clock.
        for n in 35..<75 { queue.enqueue(event(n)) }
        try await eventually("a full request at once") { queue.counters.sent == 75 }
        #expect(clock.elapsed == .milliseconds(50))
        #expect(transport.requests.map { goals($0).count } == [10, 25, 40])
        // Nor does a flush.
        for n in 75..<85 { queue.enqueue(event(n)) }
        #expect(await queue.flush(timeout: .seconds(5)))
        #expect(queue.counters.sent == 85 && clock.elapsed == .milliseconds(50))
    }

    @Test func aBackoffIsNotCutShortByNewEventsAndEndsWhenTheClockPassesIt() async throws {
        let clock = ManualClock()
        let failing = Locked(true)
        let transport = StubTransport { _ in HTTPResponse(status: failing.value ? 503 : 200) }
        let queue = trackingQueue(transport, clock: clock, batchSize: 1,
                                  retry: RetryPolicy(initial: .seconds(30), maximum: .seconds(30)))
        defer { queue.stop() }
        queue.enqueue(event(0))
        try await eventually("the first failure") { queue.counters.failedRequests == 1 }
        try await clock.waitForSleepers()
        let deadline = try #require(clock.deadlines.first)
        #expect(deadline >= .seconds(15) && deadline <= .seconds(30), "30 s, less at most half for jitter: \(deadline)")
        for n in 1...30 { queue.enqueue(event(n)) }
        clock.advance(to: deadline - .milliseconds(1))
        await letTasksRun()
        #expect(transport.requests.count == 1, "30 new events, each a full batch, wait behind the backoff")
        #expect(clock.deadlines == [deadline])
        failing.set(false)
        clock.advance(to: deadline)
        try await eventually("the retry and every event behind it") { queue.counters.sent == 31 }
        #expect(goals(transport.requests[1]) == ["g0"], "the failed batch goes first, as it was")
        #expect(transport.requests.dropFirst().flatMap(goals) == (0...30).map { "g\($0)" })
        #expect(queue.counters.failedRequests == 1)
    }

    @Test func retryAfterOutweighsAShorterBackoffToTheMillisecond() async throws {
        let clock = ManualClock()
        let answered = Counter()
        let transport = StubTransport { _ in
            answered.increment()
            return answered.value == 1 ? HTTPResponse(status: 429, headers: ["Retry-After": "30"]) : HTTPResponse(status: 200)
        }
        let queue = trackingQueue(transport, clock: clock, batchSize: 1,
                                  retry: RetryPolicy(initial: .seconds(1), maximum: .seconds(60)))
        defer { queue.stop() }
        queue.enqueue(event(0))
        try await eventually("the 429") { queue.counters.failedRequests == 1 }
        try await clock.waitForSleepers()
        #expect(clock.deadlines == [.seconds(30)], "Retry-After: 30 replaces the 1 s backoff")
        queue.enqueue(event(1))
        clock.advance(by: .milliseconds(29_999))
        await letTasksRun()
        #expect(transport.requests.count == 1)
        clock.advance(by: .milliseconds(1))
        try await eventually("the retry at 30 s") { queue.counters.sent == 2 }
        #expect(transport.requests.map(goals) == [["g0"], ["g0"], ["g1"]])
    }

    @Test func aFlushTimesOutOnTheClock() async throws {
        let clock = ManualClock()
        let transport = StubTransport { _ in HTTPResponse(status: 503) }
        let queue = trackingQueue(transport, clock: clock, batchSize: 1,
                                  retry: RetryPolicy(initial: .seconds(3600), maximum: .seconds(3600)))
        defer { queue.stop() }
        queue.enqueue(event(0))
        try await eventually("the first failure") { queue.counters.failedRequests == 1 }
        let outcome = Locked<Bool?>(nil)
        let flush = Task { outcome.set(await queue.flush(timeout: .seconds(10))) }
        try await eventually("the flush's one early attempt") { queue.counters.failedRequests == 2 }
        try await clock.waitForSleepers(2)
        #expect(clock.deadlines.first == .seconds(10), "the flush's timeout, before the hour-long backoff")
        clock.advance(by: .seconds(9))
        await letTasksRun()
        #expect(outcome.value == nil, "9 s into a 10 s flush timeout the flush still waits")
        clock.advance(by: .seconds(1))
        await flush.value
        #expect(outcome.value == false, "nothing could be acknowledged")
        #expect(transport.requests.count == 2)
        #expect(clock.deadlines.count == 1, "only the backoff still sleeps")
    }

    @Test func dropAndRefusalLogsAreRateLimitedByTheClock() async throws {
        let clock = ManualClock()
        let logs = RecordingLogSink()
        let transport = StubTransport { _ in HTTPResponse(status: 200) }
        let full = trackingQueue(transport, clock: clock, capacity: 1, logs: logs)
        defer { full.stop() }
        #expect(full.offer(event(0)))
        for n in 1...5 { #expect(!full.offer(event(n))) }
        clock.advance(by: .seconds(9))
        #expect(!full.offer(event(6)))
        #expect(logs.messages.filter { $0.contains("dropped") } == ["tracking queue full (1): 1 event(s) dropped since the last warning, 1 in all"])
        clock.advance(by: .seconds(1))
        #expect(!full.offer(event(7)))
        #expect(logs.messages.filter { $0.contains("dropped") }.last == "tracking queue full (1): 6 event(s) dropped since the last warning, 7 in all",
                "10 s later the drops since the last line are reported")

        // Events of one visitor are refused while the others' are taken: those are given up.
        let refusing = RecordingLogSink()
        let picky = StubTransport { request in
            HTTPResponse(status: String(decoding: request.body ?? Data(), as: UTF8.self).contains(#""bad""#) ? 400 : 200)
        }
        let refused = trackingQueue(picky, clock: clock, batchSize: 1, logs: refusing)
        defer { refused.stop() }
        func bad(_ n: Int) -> TrackingEvent {
            TrackingEvent(accountId: "1", projectId: "2", visitorId: "bad", segments: nil,
                          payload: .conversion(goalId: "b\(n)", goalData: nil, bucketingData: nil))
        }
        for n in 0..<3 {
            refused.enqueue(event(100 + n))
            refused.enqueue(bad(n))
        }
        refused.enqueue(event(103))
        try await eventually("three refusals") { refused.counters.rejected == 3 }
        #expect(refusing.messages.filter { $0.contains("refused") && $0.contains("given up") }.count == 1)
        clock.advance(by: .seconds(10))
        refused.enqueue(bad(3))
        refused.enqueue(event(104))
        try await eventually("a fourth refusal") { refused.counters.rejected == 4 }
        let lines = refusing.messages.filter { $0.contains("refused") && $0.contains("given up") }
        #expect(lines.count == 2)
        #expect(lines.last?.contains("refused 3 event(s)") == true, "\(lines)")
    }
}

@Suite struct ClockDrivenConfigTests {
    @Test func theLoaderRefreshesWhenTheClockPassesTheIntervalAndBacksOffAfterFailures() async throws {
        let clock = ManualClock()
        let config = try Fixtures.data(.cdnConfigBaseline)
        let healthy = Locked(true)
        let transport = StubTransport { request in
            guard healthy.value else { return HTTPResponse(status: 503) }
            return request.header("If-None-Match") == "\"v1\"" ? HTTPResponse(status: 304)
                : HTTPResponse(status: 200, headers: ["ETag": "\"v1\""], body: config)
        }
        let logs = RecordingLogSink()
        let source = RemoteConfigSource(
            settings: .init(sdkKey: "k", refreshInterval: .seconds(300), retry: RetryPolicy(initial: .seconds(20), maximum: .seconds(60))),
            transport: transport, cache: MemoryByteStore(), log: SDKLog(sink: logs, minimum: .debug), clock: clock,
            random: { 0.5 })
        let delivered = Locked<[ConfigDocument]>([])
        let run = Task { try await source.run { document in delivered.withValue { $0.append(document) } } }
        defer { run.cancel() }

        try await eventually("the first fetch") { delivered.value.count == 1 }
        try await clock.waitForSleepers()
        #expect(clock.deadlines == [.seconds(300)])
        clock.advance(by: .seconds(299))
        await letTasksRun()
        #expect(transport.requests.count == 1, "no refresh before the interval")
        clock.advance(by: .seconds(1))
        try await eventually("the refresh at 300 s") { transport.requests.count == 2 }
        #expect(transport.requests[1].header("If-None-Match") == "\"v1\"")
        try await clock.waitForSleepers()
        #expect(clock.deadlines == [.seconds(600)], "a 304 waits a whole interval again")

        // Failures back off (20 s, then 40 s, each with jitter down to half), well inside the interval.
        healthy.set(false)
        clock.advance(to: .seconds(600))
        try await eventually("the first failed refresh") { transport.requests.count == 3 }
        try await clock.waitForSleepers()
        let firstRetry = try #require(clock.deadlines.first)
        #expect((.seconds(610) ... .seconds(620)).contains(firstRetry), "\(firstRetry)")
        clock.advance(to: firstRetry - .milliseconds(1))
        await letTasksRun()
        #expect(transport.requests.count == 3)
        clock.advance(to: firstRetry)
        try await eventually("the second failed refresh") { transport.requests.count == 4 }
        try await clock.waitForSleepers()
        let secondRetry = try #require(clock.deadlines.first)
        #expect((firstRetry + .seconds(20) ... firstRetry + .seconds(40)).contains(secondRetry), "\(secondRetry)")
        #expect(logs.contains("HTTP 503"))

        // Recovery: the 304 resets the backoff and the next refresh is an interval away.
        healthy.set(true)
        clock.advance(to: secondRetry)
        try await eventually("the recovered refresh") { transport.requests.count == 5 }
        try await clock.waitForSleepers()
        #expect(clock.deadlines == [secondRetry + .seconds(300)])
        #expect(delivered.value.map(\.origin) == [.network], "304s deliver nothing")
        run.cancel()
        _ = await run.result
        #expect(clock.deadlines.isEmpty, "cancelling the loader ends its sleep at once")
    }

    @Test func aChangedDocumentIsDeliveredAtTheRefresh() async throws {
        let clock = ManualClock()
        let first = try Fixtures.data(.staticConfig)
        let second = try Fixtures.data(.cdnConfigBaseline)
        let serving = Locked(first)
        let transport = StubTransport { _ in HTTPResponse(status: 200, body: serving.value) }
        let cache = MemoryByteStore()
        let source = RemoteConfigSource(settings: .init(sdkKey: "k", refreshInterval: .seconds(60)), transport: transport,
                                        cache: cache, clock: clock, random: { 0.5 })
        let delivered = Locked<[Data]>([])
        let run = Task { try await source.run { document in delivered.withValue { $0.append(document.bytes) } } }
        defer { run.cancel() }
        try await eventually("the first document") { delivered.value.count == 1 }
        serving.set(second)
        try await clock.waitForSleepers()
        clock.advance(by: .seconds(60))
        try await eventually("the changed document") { delivered.value.count == 2 }
        #expect(delivered.value == [first, second])
        #expect(try cache.read(source.cacheName) == second)
    }
}

@Suite struct ClockDrivenReadinessTests {
    @Test func readyTimesOutWhenTheClockPassesTheTimeout() async throws {
        let clock = ManualClock()
        let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "k", persistence: .memory), ports: ConvertPorts(
            configSource: StubConfigSource(), visitorStore: MemoryVisitorDataStore(), visitorIdStore: MemoryVisitorIdStore(),
            trackingSink: RecordingTrackingSink(), sleepClock: clock))
        let outcome = Locked<(any Error)??>(nil)
        let waiter = Task {
            do {
                try await sdk.ready(timeout: .seconds(30))
                outcome.set(.some(nil))
            } catch {
                outcome.set(.some(error))
            }
        }
        try await clock.waitForSleepers()
        #expect(clock.deadlines == [.seconds(30)])
        clock.advance(by: .seconds(29))
        await letTasksRun()
        #expect(outcome.value == nil, "29 s into a 30 s timeout ready() still waits")
        clock.advance(by: .seconds(1))
        await waiter.value
        let error = try #require(outcome.value ?? nil, "ready() threw")
        #expect(error as? ConvertError == .readyTimedOut(milliseconds: 30_000))
    }
}
