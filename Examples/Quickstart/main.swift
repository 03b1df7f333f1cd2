// The first thing to run: a few hundred visitors through the bundled real config, with every
// tracking batch delivered to a local file, and a report of what happened.
//
//   swift run quickstart                        # bundled config, 300 visitors, offline
//   swift run quickstart --visitors 2000
//   swift run quickstart --sdk-key KEY          # the live config from Convert's CDN; nothing tracked
//   swift run quickstart --sdk-key KEY --send   # ... and the events sent to the project
import ConvertSwiftSDK
import ConvertTransport
import ConvertVisitor
import Foundation

let options = QuickstartOptions(CommandLine.arguments.dropFirst())
if options.help {
    print(QuickstartOptions.usage)
    exit(0)
}
if options.version {
    print("quickstart \(ConvertAgent.version)")
    exit(0)
}
if let problem = options.problem {
    FileHandle.standardError.write(Data("quickstart: \(problem)\n\(QuickstartOptions.usage)\n".utf8))
    exit(2)
}

let batches = FileManager.default.temporaryDirectory.appendingPathComponent("convert-quickstart-\(getpid()).jsonl")
let sdk: ConvertSwiftSDK
// Offline, the batches go to a file; with a key, the counting sink says what was sent.
var fileTransport: BatchFileTransport?
var counting: CountingTrackingSink?
if let key = options.sdkKey {
    let endpoint = options.endpoint
    // Tracking is off unless asked for: the synthetic visitors would land in the project's reports.
    let configuration = ConvertConfiguration(
        sdkKey: key, sdkKeySecret: options.sdkKeySecret, environment: options.environment,
        apiConfigEndpoint: endpoint ?? ConvertConfiguration.defaultConfigEndpoint,
        apiTrackEndpoint: endpoint ?? ConvertConfiguration.defaultTrackEndpoint,
        networkTracking: options.send, persistence: .memory,
        allowsInsecureHTTP: endpoint?.hasPrefix("http://127.0.0.1") == true || endpoint?.hasPrefix("http://localhost") == true)
    var ports = ConvertPorts.live(configuration)
    let sink = CountingTrackingSink(wrapping: ports.trackingSink)
    ports.trackingSink = sink
    counting = sink
    sdk = ConvertSwiftSDK(configuration: configuration, ports: ports)
} else {
    let data = ConvertSwiftSDK.sampleConfig
    // A key routes tracking batches through the queue; the transport writes them to a file.
    let transport = BatchFileTransport(file: batches)
    fileTransport = transport
    let configuration = ConvertConfiguration(sdkKey: "10035569/10034190", environment: options.environment,
                                             eventsBatchSize: 25, logLevel: .warn, persistence: .memory)
    sdk = ConvertSwiftSDK(configuration: configuration,
                          ports: .live(configuration, directData: data, transport: transport))
}

do {
    try await sdk.ready(timeout: .seconds(15))
} catch {
    FileHandle.standardError.write(Data("quickstart: the SDK did not become ready: \(error)\n".utf8))
    exit(1)
}
let config = sdk.config!
var report = Report(config: config)

for i in 0..<options.visitors {
    let visitor = SyntheticVisitor(index: i)
    let context = sdk.createContext(visitorId: visitor.id, attributes: visitor.attributes)
    context.setLocationProperties(visitor.location)
    for experience in config.experiences {
        report.record(experience: experience.key, variation: context.variation(forExperience: experience.key))
    }
    for feature in context.features() {
        report.record(feature: feature)
    }
    if i % 3 == 0, let goal = config.goals.last {
        report.record(conversion: await context.trackConversion(goal.key, goalData: [GoalDataItem(.amount, .number(Double(10 + i % 40)))]))
    }
}
let delivery = await sdk.shutdown(timeout: .seconds(5))
print(report.render(visitors: options.visitors, environment: sdk.environment ?? "-"))

let project = "project \(config.project.id) (account \(config.accountId))"
if let counting, options.send {
    let taken = counting.taken
    print("Tracking: sent to \(project): \(taken.bucketing) bucketing and \(taken.conversions) conversion events; "
          + "shutdown delivered \(delivery.delivered), left pending \(delivery.leftPending) (\(delivery.counters))")
} else if counting != nil {
    print("Tracking: not sent; these were decisions only. Add --send to send this run's bucketing and "
          + "conversion events to \(project).")
} else if let fileTransport {
    let counters = sdk.trackingCounters
    print("Tracking: enqueued \(counters.enqueued), sent \(counters.sent) in \(fileTransport.batchCount) batches, "
          + "retried \(counters.retried), dropped \(counters.dropped), pending \(counters.pending)")
    print("Batches written to \(batches.path)")
}
