// Test helper: enqueues tracking events into a file-journaled queue, printing "ack N" once each
// enqueue has returned (and first "role owner" or "role writer": whether it holds the
// directory's main journal). Tests kill it mid-stream, one or two at a time on one directory,
// and check that restarted queues deliver every acknowledged event.
import ConvertEvents
import ConvertFileStorage
import ConvertQueue
import ConvertTransport
import ConvertURLSessionTransport
import Foundation

struct StalledTransport: HTTPTransport {
    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        try await Task.sleep(for: .seconds(3600))
        throw TransportError.timedOut
    }
}

// usage: JournalProbe DIRECTORY COUNT [RUN SERVER_URL [exit]]
// With a server, events are delivered to it while they are enqueued (retrying on failures).
// With "exit", batches are of 10 and the process exits right after its enqueues, no flush.
let arguments = CommandLine.arguments
guard (3...6).contains(arguments.count), arguments.count != 4, let count = Int(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: JournalProbe DIRECTORY COUNT [RUN SERVER_URL [exit]]\n".utf8))
    exit(2)
}
let exitsAtOnce = arguments.count == 6 && arguments[5] == "exit"
let run = arguments.count >= 5 ? arguments[3] : "0"
let journal = try FileEventJournal(directory: URL(fileURLWithPath: arguments[1]))
FileHandle.standardOutput.write(Data("role \(journal.isOwner ? "owner" : "writer")\n".utf8))
let queue: TrackingQueue
if arguments.count >= 5 {
    let size = exitsAtOnce ? 10 : 20
    queue = TrackingQueue(transport: URLSessionTransport(),
                          endpoint: TrackingEndpoint(template: arguments[4], sdkKey: "probe",
                                                     policy: EndpointPolicy(allowsInsecureHTTP: true)),
                          // Small batches: a kill can repeat at most the one batch in flight.
                          // With "exit", the SDK's defaults: a backlog may drain in larger requests.
                          options: TrackingQueueOptions(batchSize: size, releaseInterval: .milliseconds(10),
                                                        maximumBatchEvents: exitsAtOnce ? 500 : size,
                                                        retry: RetryPolicy(initial: .milliseconds(5), maximum: .milliseconds(50))),
                          journal: journal)
} else {
    queue = TrackingQueue(transport: StalledTransport(),
                          endpoint: TrackingEndpoint(template: "https://example.invalid/v1", sdkKey: "probe"),
                          options: TrackingQueueOptions(batchSize: 1_000_000, releaseInterval: .seconds(3600)),
                          journal: journal)
}
for i in 0..<count {
    queue.enqueue(TrackingEvent(accountId: "1", projectId: "2", visitorId: "visitor-\(i % 7)", segments: nil,
                                payload: .conversion(goalId: run == "0" ? "goal-\(i)" : "goal-\(run)-\(i)", goalData: nil,
                                                     bucketingData: nil)))
    FileHandle.standardOutput.write(Data("ack \(i)\n".utf8))
    if arguments.count == 5 && i % 50 == 49 { usleep(2000) }
}
FileHandle.standardOutput.write(Data("done\n".utf8))
if exitsAtOnce { exit(0) }
while true { sleep(60) }
