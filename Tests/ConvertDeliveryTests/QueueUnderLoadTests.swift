import ConvertEnvironment
import ConvertFileStorage
import ConvertQueue
import ConvertSynchronization
import ConvertTesting
import ConvertTracking
import ConvertTransport
import Foundation
import Testing

/// A delivery that takes `delay` per request and acknowledges (or, when `up` is false, asks to
/// retry) every batch, counting the events it took.
private final class PacedDelivery: TrackingDelivery, Sendable {
    let delay: Duration
    let up: Locked<Bool>
    let received = Locked(0)
    let requests = Locked(0)

    init(delay: Duration, up: Bool = true) {
        self.delay = delay
        self.up = Locked(up)
    }

    func deliver(_ events: [TrackingEvent]) async -> TrackingDeliveryAnswer {
        try? await Task.sleep(for: delay)
        guard up.value else { return .retryLater(after: nil, reason: "down") }
        received.withValue { $0 += events.count }
        requests.withValue { $0 += 1 }
        return .delivered
    }
}

private func event(_ n: Int) -> TrackingEvent {
    TrackingEvent(accountId: "1", projectId: "2", visitorId: "v\(n % 97)", segments: nil,
                  payload: .conversion(goalId: "g\(n)", goalData: nil, bucketingData: nil))
}

/// The queue with its default batch size under a load that one batch per request cannot carry.
@Suite struct QueueUnderLoadTests {
    @Test func aLoadFasterThanABatchPerRequestLosesNothing() async throws {
        // 10 events a request at 3 ms a request carry about 3,300 events a second: the load
        // below brings 40,000 a second for 0.2 s into a queue of 2,000.
        let delivery = PacedDelivery(delay: .milliseconds(3))
        let logs = RecordingLogSink()
        let queue = TrackingQueue(delivery: delivery,
                                  options: TrackingQueueOptions(batchSize: 10, releaseInterval: .milliseconds(20), capacity: 2_000),
                                  log: SDKLog(sink: logs, minimum: .debug))
        var n = 0
        for _ in 0..<20 {
            for _ in 0..<400 {
                queue.enqueue(event(n))
                n += 1
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(await queue.flush(timeout: .patience))
        let counters = queue.counters
        #expect(counters.dropped == 0, "\(logs.messages(at: .warn))")
        #expect(delivery.received.value == n)
        #expect(counters.sent == n)
        #expect(delivery.requests.value < n / 10, "requests grew with the backlog")
        _ = await queue.shutdown(timeout: .seconds(1))
    }

    @Test func dropsAreWarnedWithTheirCountAndTotal() async throws {
        let delivery = PacedDelivery(delay: .milliseconds(1), up: false)
        let logs = RecordingLogSink()
        let queue = TrackingQueue(delivery: delivery,
                                  options: TrackingQueueOptions(batchSize: 10, releaseInterval: .milliseconds(20), capacity: 50),
                                  log: SDKLog(sink: logs, minimum: .debug))
        for n in 0..<80 { queue.enqueue(event(n)) }
        #expect(queue.counters.dropped == 30)
        let warnings = logs.messages(at: .warn).filter { $0.contains("tracking queue full") }
        #expect(warnings.first?.contains("in all") == true, "\(warnings)")
        _ = await queue.shutdown(timeout: .milliseconds(50))
    }

    @Test(arguments: [false, true])
    func aShutdownThatCannotDeliverSaysWhatItKeepsAndWhatItLoses(journaled: Bool) async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let delivery = PacedDelivery(delay: .milliseconds(1), up: false)
        let queue = TrackingQueue(delivery: delivery,
                                  options: TrackingQueueOptions(batchSize: 5, releaseInterval: .milliseconds(10),
                                                                retry: RetryPolicy(initial: .milliseconds(5), maximum: .milliseconds(10))),
                                  journal: journaled ? try FileEventJournal(directory: directory) : nil)
        for n in 0..<12 { queue.enqueue(event(n)) }
        let report = await queue.shutdown(timeout: .milliseconds(200))
        #expect(report.leftPending == 12)
        #expect(report.journaled == (journaled ? 12 : 0))
        #expect(report.lost == (journaled ? 0 : 12))
        let summary = try #require(report.undeliveredSummary)
        #expect(summary.contains(journaled ? "12 kept in the journal" : "12 lost"), "\(summary)")
    }
}
