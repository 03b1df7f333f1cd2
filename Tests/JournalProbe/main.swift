// Test helper: enqueues tracking events into a file-journaled queue whose deliveries never
// complete, printing "ack N" once each enqueue has returned. A test kills it mid-stream and
// checks that a restarted queue delivers every acknowledged event.
import ConvertEvents
import ConvertFileStorage
import ConvertQueue
import ConvertTransport
import Foundation

struct StalledTransport: HTTPTransport {
    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        try await Task.sleep(for: .seconds(3600))
        throw TransportError.timedOut
    }
}

let arguments = CommandLine.arguments
guard arguments.count == 3, let count = Int(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: JournalProbe DIRECTORY COUNT\n".utf8))
    exit(2)
}
let journal = try FileEventJournal(directory: URL(fileURLWithPath: arguments[1]))
let queue = TrackingQueue(transport: StalledTransport(),
                          endpoint: TrackingEndpoint(template: "https://example.invalid/v1", sdkKey: "probe"),
                          options: TrackingQueueOptions(batchSize: 1_000_000, releaseInterval: .seconds(3600)),
                          journal: journal)
for i in 0..<count {
    queue.enqueue(TrackingEvent(accountId: "1", projectId: "2", visitorId: "visitor-\(i % 7)", segments: nil,
                                payload: .conversion(goalId: "goal-\(i)", goalData: nil, bucketingData: nil)))
    FileHandle.standardOutput.write(Data("ack \(i)\n".utf8))
}
FileHandle.standardOutput.write(Data("done\n".utf8))
while true { sleep(60) }
