// Assembling the SDK by hand from chosen adapters — the plug-in design in one file:
// file storage in a directory of our choosing, the URLSession transport, our own logger, and
// our own flush policy. Nothing here is wired by the umbrella's defaults.
//
//   swift run custom-build                    # the bundled config, delivered nowhere (no key)
//   swift run custom-build --sdk-key KEY      # the live config and the real metrics host
import ConvertConfigLoader
import ConvertCore
import ConvertEvents
import ConvertFileStorage
import ConvertModel
import ConvertQueue
import ConvertRules
import ConvertStorage
import ConvertSupport
import ConvertTransport
import ConvertURLSessionTransport
import Foundation

/// Our own logger: timestamps and levels, to standard output.
struct TimestampLog: LogSink {
    func log(_ level: LogLevel, _ message: String) {
        print("\(ISO8601DateFormatter().string(from: Date())) [\(level.name)] \(message)")
    }
}

let arguments = Array(CommandLine.arguments.dropFirst())
let sdkKey = arguments.count == 2 && arguments[0] == "--sdk-key" ? arguments[1] : nil
guard arguments.isEmpty || sdkKey != nil else {
    FileHandle.standardError.write(Data("usage: custom-build [--sdk-key KEY]\n".utf8))
    exit(2)
}

let directory = FileManager.default.temporaryDirectory.appendingPathComponent("convert-custom-build")
let logSink = TimestampLog()
let log = SDKLog(sink: logSink, minimum: .info)
let events = SystemEventHub()
let transport = URLSessionTransport(maximumBodyBytes: 2_000_000)
let blobs = try FileByteStore(directory: directory)
let configuration = ConvertConfiguration(sdkKey: sdkKey ?? "", logLevel: .info)

let source: any ConfigSource
if let sdkKey {
    source = RemoteConfigSource(settings: .init(sdkKey: sdkKey, refreshInterval: .seconds(60)), transport: transport,
                                cache: blobs, log: log)
} else {
    let bundled = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Quickstart/Resources/cdn-config.json").standardizedFileURL
    source = DirectConfigSource(bytes: try Data(contentsOf: bundled))
}

// Our flush policy: bigger batches, a 5 second release interval, gentle retries.
let queue = TrackingQueue(
    transport: transport,
    endpoint: TrackingEndpoint(template: configuration.apiTrackEndpoint, sdkKey: sdkKey ?? "unset"),
    options: TrackingQueueOptions(batchSize: 50, releaseInterval: .seconds(5), capacity: 20_000,
                                  retry: RetryPolicy(initial: .seconds(2), maximum: .seconds(120))),
    journal: try FileEventJournal(directory: directory, log: log), events: events, log: log)

let sdk = ConvertSwiftSDK(configuration: configuration, ports: ConvertPorts(
    configSource: source,
    visitorStore: try FileVisitorDataStore(directory: directory, capacity: 50_000, log: log),
    visitorIdStore: ByteStoreVisitorIdStore(store: blobs),
    trackingSink: sdkKey == nil ? DiscardingTrackingSink() : queue,
    logSink: logSink,
    events: events))

try await sdk.ready(timeout: .seconds(15))
let context = sdk.createContext()
context.setLocationProperties(["location": "pricing"])
let variation = await context.runExperience("test-experience-ab-fullstack-4")
print("visitor \(context.visitorId) (persisted in \(directory.path)) sees \(variation?.key ?? "no variation")")
let feature = await context.runFeature("feature-2")
print("feature-2 is \(feature.status.rawValue); price \(feature.double("price").map { String($0) } ?? "-")")
_ = await sdk.shutdown(timeout: .seconds(5))
print("tracking: \(sdk.trackingCounters)")
