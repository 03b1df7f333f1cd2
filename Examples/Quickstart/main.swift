import ConvertBucketing
import ConvertModel
import Foundation

// Decodes the bundled real CDN config and shows where a few visitors land in each experience.
// Usage: quickstart [CONFIG.json] [VISITOR ...]

let arguments = Array(CommandLine.arguments.dropFirst())
let configURL: URL
if let path = arguments.first, path.hasSuffix(".json") {
    configURL = URL(fileURLWithPath: path)
} else if let bundled = Bundle.module.url(forResource: "cdn-config", withExtension: "json", subdirectory: "Resources") {
    configURL = bundled
} else {
    FileHandle.standardError.write(Data("quickstart: the bundled config is missing\n".utf8))
    exit(1)
}

let visitors = arguments.filter { !$0.hasSuffix(".json") }.isEmpty
    ? ["visitor-1", "visitor-2", "visitor-3", "alice", "bob"]
    : arguments.filter { !$0.hasSuffix(".json") }

do {
    let decoded = try ConfigDecoder.decode(Data(contentsOf: configURL))
    let config = decoded.config
    print("Project \(config.project.name ?? config.project.id) (account \(config.accountId))")
    print("\(config.experiences.count) experiences, \(config.features.count) features, \(config.goals.count) goals")
    for d in decoded.degradations { print("  degraded: \(d)") }
    for experience in config.experiences {
        let version = experience.version.map { String(Int($0)) } ?? "-"
        print("\n\(experience.key)  [id \(experience.id), version \(version), \(experience.bucketTable.layout.rawValue)]")
        for range in experience.bucketTable.ranges {
            let key = experience.variation(id: range.variationId)?.key ?? range.variationId
            print("  \(key): buckets \(Int(range.lower))..<\(Int(range.upper))")
        }
        for visitor in visitors {
            let value = BucketValue.of(experienceId: experience.id, visitorId: visitor)
            let variation = experience.bucketTable.variation(forValue: value)
                .flatMap { experience.variation(id: $0)?.key } ?? "(not bucketed)"
            print("  \(visitor.padding(toLength: 12, withPad: " ", startingAt: 0)) bucket \(value) -> \(variation)")
        }
    }
} catch let error as ConfigDecodingError {
    FileHandle.standardError.write(Data("quickstart: \(error.description)\n".utf8))
    exit(1)
} catch {
    FileHandle.standardError.write(Data("quickstart: \(error.localizedDescription)\n".utf8))
    exit(1)
}
