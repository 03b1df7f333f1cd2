// The first thing to run: a few hundred visitors through the bundled real config, with every
// tracking batch delivered to a local file, and a report of what happened.
//
//   swift run quickstart                      # bundled config, 300 visitors
//   swift run quickstart --visitors 2000
//   swift run quickstart --sdk-key KEY        # the live config from Convert's CDN
import ConvertSwiftSDK
import ConvertVisitor
import Foundation

let options = QuickstartOptions(CommandLine.arguments.dropFirst())
if let problem = options.problem {
    FileHandle.standardError.write(Data("quickstart: \(problem)\n\(QuickstartOptions.usage)\n".utf8))
    exit(2)
}

let batches = FileManager.default.temporaryDirectory.appendingPathComponent("convert-quickstart-\(getpid()).jsonl")
let transport = BatchFileTransport(file: batches)
let sdk: ConvertSwiftSDK
if let key = options.sdkKey {
    let configuration = ConvertConfiguration(sdkKey: key, environment: options.environment, persistence: .memory)
    sdk = ConvertSwiftSDK(configuration: configuration)
} else {
    guard let url = Bundle.module.url(forResource: "cdn-config", withExtension: "json", subdirectory: "Resources"),
          let data = try? Data(contentsOf: url) else {
        FileHandle.standardError.write(Data("quickstart: the bundled config is missing\n".utf8))
        exit(1)
    }
    // A key routes tracking batches through the queue; the transport writes them to a file.
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
        report.record(experience: experience.key, variation: await context.runExperience(experience.key))
    }
    for feature in await context.runFeatures() {
        report.record(feature: feature)
    }
    if i % 3 == 0, let goal = config.goals.last {
        report.record(conversion: await context.trackConversion(goal.key, goalData: [GoalDataItem(.amount, .number(Double(10 + i % 40)))]))
    }
}
_ = await sdk.shutdown(timeout: .seconds(5))
print(report.render(visitors: options.visitors, environment: sdk.environment ?? "-", counters: sdk.trackingCounters,
                    batches: transport.batchCount, file: options.sdkKey == nil ? batches.path : nil))
