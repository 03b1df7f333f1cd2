// Assembling the SDK by hand from chosen adapters — the plug-in design in one file:
// file storage in a directory of our choosing, the URLSession transport, our own logger, and
// our own flush policy. Nothing here is wired by the umbrella's defaults.
//
//   swift run custom-build                    # the bundled config, delivered nowhere (no key)
//   swift run custom-build --sdk-key KEY      # the live config and the real metrics host
import ConvertConfigLoader
import ConvertCore
import ConvertEnvironment
import ConvertEvents
import ConvertTracking
import ConvertFileStorage
import ConvertModel
import ConvertQueue
import ConvertRules
import ConvertStorage
import ConvertTransport
import ConvertURLSessionTransport
import Foundation

/// Our own logger: timestamps and levels, to standard output.
struct TimestampLog: LogSink {
    func log(_ level: LogLevel, _ message: String) {
        print("\(ISO8601DateFormatter().string(from: Date())) [\(level.name)] \(message)")
    }
}

let usage = """
usage: custom-build [--sdk-key KEY [--sdk-key-secret SECRET]]
       custom-build --help | --version

Assembles the SDK by hand (file storage, URLSession transport, own logger and flush policy)
and decides one visitor. Without a key: the bundled config, and tracking goes nowhere. With a
key: the live config, and tracking goes to the project. The secret may come from the
environment variable CONVERT_SDK_KEY_SECRET instead of --sdk-key-secret (the flag wins).
"""

/// Exits with status 2 after naming what is wrong with the command line.
func usageError(_ problem: String) -> Never {
    FileHandle.standardError.write(Data("custom-build: \(problem)\n\(usage)\n".utf8))
    exit(2)
}

var sdkKey: String?
var sdkKeySecret: String?
var rest = Array(CommandLine.arguments.dropFirst())
while !rest.isEmpty {
    let name = rest.removeFirst()
    switch name {
    case "--help", "-h":
        print(usage)
        exit(0)
    case "--version":
        print("custom-build \(ConvertAgent.version)")
        exit(0)
    case "--sdk-key", "--sdk-key-secret":
        guard !rest.isEmpty else { usageError("\(name) needs a value") }
        if name == "--sdk-key" { sdkKey = rest.removeFirst() } else { sdkKeySecret = rest.removeFirst() }
    default:
        usageError(name.hasPrefix("-") ? "unknown option \(name)" : "unexpected argument \"\(name)\"")
    }
}
if sdkKey == nil, sdkKeySecret != nil { usageError("--sdk-key-secret needs --sdk-key") }
if sdkKeySecret == nil, let secret = ProcessInfo.processInfo.environment["CONVERT_SDK_KEY_SECRET"], !secret.isEmpty {
    sdkKeySecret = secret
}

let directory = FileManager.default.temporaryDirectory.appendingPathComponent("convert-custom-build")
let logSink = TimestampLog()
let log = SDKLog(sink: logSink, minimum: .info)
let events = SystemEventHub()
let transport = URLSessionTransport(maximumBodyBytes: 2_000_000)
let blobs = try FileByteStore(directory: directory)
let configuration = ConvertConfiguration(sdkKey: sdkKey ?? "", sdkKeySecret: sdkKeySecret, logLevel: .info)

let source: any ConfigSource
if let sdkKey {
    source = RemoteConfigSource(settings: .init(sdkKey: sdkKey, sdkKeySecret: sdkKeySecret, refreshInterval: .seconds(60)),
                                transport: transport,
                                cache: blobs, log: log)
} else {
    source = DirectConfigSource(bytes: ConvertSwiftSDK.sampleConfig)
}

// Our flush policy: bigger batches, a 5 second release interval, gentle retries.
let queue = TrackingQueue(
    transport: transport,
    endpoint: TrackingEndpoint(template: configuration.apiTrackEndpoint, sdkKey: sdkKey ?? "unset"),
    options: TrackingQueueOptions(batchSize: 50, releaseInterval: .seconds(5), capacity: 20_000,
                                  retry: RetryPolicy(initial: .seconds(2), maximum: .seconds(120))),
    journal: try FileEventJournal(directory: directory, log: log), log: log, released: events.queueReleased)

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
