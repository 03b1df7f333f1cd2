// Test helper: enqueues tracking events into a file-journaled queue, printing "ack N" once each
// enqueue has returned (and first "role owner" or "role writer": whether it holds the
// directory's main journal). Tests kill it mid-stream, one or two at a time on one directory,
// and check that restarted queues deliver every acknowledged event.
//
// With "network SERVER_URL" it runs the SDK's network paths once instead — two config fetches
// and a tracking POST through one URLSessionTransport — and exits: tests start it with HOME set
// to an empty directory (Foundation reads HOME once per process) and look at what was left there.
import ConvertConfigLoader
import ConvertEvents
import ConvertTracking
import ConvertFileStorage
import ConvertQueue
import ConvertSwiftSDK
import ConvertTransport
import ConvertURLSessionTransport
import Foundation

struct StalledTransport: HTTPTransport {
    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        try await Task.sleep(for: .seconds(3600))
        throw TransportError.timedOut
    }
}

/// Fetches the config from `server` twice (the second fetch would carry a cookie the first answer
/// set, were cookies kept) and delivers one tracking event to it, all through one transport as
/// the SDK's default ports do; prints "config fresh" per fetch and "tracking sent N". Exits 0
/// when everything arrived.
func runNetworkPaths(server: String) async -> Never {
    let transport = URLSessionTransport()
    let policy = EndpointPolicy(allowsInsecureHTTP: true)
    let source = RemoteConfigSource(settings: .init(sdkKey: "10035569/10034190", endpoint: server, requestTimeout: .seconds(10),
                                                    policy: policy),
                                    transport: transport, cache: nil)
    var failed = false
    for _ in 0..<2 {
        switch await source.fetch(etag: nil) {
        case .fresh: print("config fresh")
        case .notModified: print("config not modified")
        case .failed(let error):
            print("config failed: \(error)")
            failed = true
        }
    }
    let queue = TrackingQueue(transport: transport,
                              endpoint: TrackingEndpoint(template: server + "/[project_id]/v1", sdkKey: "10035569/10034190",
                                                         policy: policy),
                              options: TrackingQueueOptions(batchSize: 1, releaseInterval: .milliseconds(10),
                                                            retry: RetryPolicy(initial: .milliseconds(5), maximum: .milliseconds(50)),
                                                            requestTimeout: .seconds(10)))
    queue.enqueue(TrackingEvent(accountId: "10035569", projectId: "10034190", visitorId: "home-probe", segments: nil,
                                payload: .conversion(goalId: "100322784", goalData: nil, bucketingData: nil)))
    let settled = await queue.flush(timeout: .seconds(60))
    let shutdown = await queue.shutdown(timeout: .seconds(10))
    print("tracking sent \(shutdown.counters.sent)")
    exit(!failed && settled && shutdown.counters.sent == 1 ? 0 : 1)
}

/// An SDK with file persistence in `directory`, its config and tracking at `server`, run by
/// commands read from standard input, one a line, each answered by one line:
/// `decide V` (test-experience-ab-fullstack-1, automatic exposure) → `variation ID|none`;
/// `manual V` (the same, manual exposure) → `variation ID|none`; `expose V` → the exposure
/// result; `convert V` (increase-engagement) → the conversion result; `forget V` → `forgot
/// true|false`; `data V` → `data bucketing=N goals=A,B` (decisions stored, goals sorted); `flush` → `flushed
/// true|false`; `exit` → `shutdown` and the process ends.
/// One answer line on standard output, unbuffered.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func runSDK(directory: String, server: String) async -> Never {
    let configuration = ConvertConfiguration(
        sdkKey: "10035569/10034190", apiConfigEndpoint: server + "/api/v1", apiTrackEndpoint: server + "/[project_id]/v1",
        dataRefreshIntervalMs: 3_600_000, eventsBatchSize: 1, eventsReleaseIntervalMs: 10, logLevel: .warn,
        persistence: .file, storageDirectory: URL(fileURLWithPath: directory), requestTimeoutMs: 2000, allowsInsecureHTTP: true)
    let sdk = ConvertSwiftSDK(configuration: configuration)
    do {
        try await sdk.ready(timeout: .seconds(30))
    } catch {
        say("not ready: \(error)")
        exit(1)
    }
    func context(_ visitor: String) -> ConvertContext {
        let context = sdk.createContext(visitorId: visitor, attributes: ["mobile": true])
        context.setLocationProperties(["location": "pricing"])
        return context
    }
    say("ready")
    while let line = readLine() {
        let words = line.split(separator: " ").map(String.init)
        guard let command = words.first else { continue }
        let visitor = words.count > 1 ? words[1] : ""
        switch command {
        case "decide", "manual":
            let exposure: Exposure = command == "manual" ? .manual : .automatic
            say("variation \(context(visitor).variation(forExperience: "test-experience-ab-fullstack-1", exposure: exposure)?.id ?? "none")")
        case "expose":
            say("\(await context(visitor).trackExposure(forExperience: "test-experience-ab-fullstack-1"))")
        case "convert":
            say("\(await context(visitor).trackConversion("increase-engagement"))")
        case "forget":
            say("forgot \(await sdk.forget(visitorId: visitor))")
        case "data":
            let data = context(visitor).visitorData()
            say("data bucketing=\(data.bucketing.count) goals=\(data.goals.sorted().joined(separator: ","))")
        case "flush":
            say("flushed \(await sdk.flush(timeout: .seconds(10)))")
        case "exit":
            say("\(await sdk.shutdown(timeout: .seconds(5)))")
            exit(0)
        default:
            say("unknown \(command)")
        }
    }
    exit(0)
}

// usage: JournalProbe DIRECTORY COUNT [RUN SERVER_URL [exit]]
//        JournalProbe network SERVER_URL
//        JournalProbe sdk DIRECTORY SERVER_URL
// With a server, events are delivered to it while they are enqueued (retrying on failures).
// With "exit", batches are of 10 and the process exits right after its enqueues, no flush.
let arguments = CommandLine.arguments
if arguments.count == 3, arguments[1] == "network" {
    await runNetworkPaths(server: arguments[2])
}
if arguments.count == 4, arguments[1] == "sdk" {
    await runSDK(directory: arguments[2], server: arguments[3])
}
guard (3...6).contains(arguments.count), arguments.count != 4, let count = Int(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: JournalProbe DIRECTORY COUNT [RUN SERVER_URL [exit]] | network SERVER_URL\n".utf8))
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
