import ConvertBucketing
import ConvertSwiftSDK
import Foundation

/// `convert simulate`: how many visitors change variation when a config changes, or, without
/// `--after`, whether one config's splits follow its allocation (a sample-ratio check).
enum SimulateCommand {
    static let help = """
    usage: convert simulate --config OLD --after NEW [--visitors N] [--format text|json]
           convert simulate --config CONFIG [--visitors N] [--format text|json]

    With --after: for every experience in both configs (matched by key), buckets N synthetic
    visitors (default 10000) under each and reports the share whose variation changes — the
    allocation flip of packed bucketing, visible before it ships.

    Without --after: for every experience, buckets N synthetic visitors (srm-0, srm-1, …) and
    compares each variation's count, and the count bucketed into none, with the split the
    traffic allocation promises (as bucketing lays it out), by a chi-square goodness-of-fit
    test: the statistic, degrees of freedom and p-value, and a WARNING line when p < 0.001
    (a sample-ratio mismatch).

    Targeting is not applied: this is the bucketing itself. --format json (or --json) prints
    one JSON object instead.
    """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let args = try Arguments(arguments, options: ["config", "after", "visitors", "format"], flags: ["json"])
        let json = try args.choice("format", of: ["text", "json"], default: args.flag("json") ? "json" : "text") == "json"
        let old = try load(try args.required("config"), option: "config")
        let visitors = try args.integer("visitors", default: 10_000)
        guard let afterPath = args.value("after") else { return sampleRatios(old, visitors: visitors, json: json) }
        let new = try load(afterPath, option: "after")
        var rows: [JSONValue] = []
        for before in old.experiences {
            guard let after = new.experience(key: before.key) else { continue }
            var changed = 0, bucketedBefore = 0, bucketedAfter = 0
            for i in 0..<visitors {
                let visitor = "simulated-visitor-\(i)"
                let a = before.bucketTable.variation(experienceId: before.id, visitorId: visitor)
                let b = after.bucketTable.variation(experienceId: after.id, visitorId: visitor)
                if a != nil { bucketedBefore += 1 }
                if b != nil { bucketedAfter += 1 }
                if a != b { changed += 1 }
            }
            let share = Double(changed) / Double(visitors)
            rows.append(["experienceKey": .string(before.key), "layoutBefore": .string(before.bucketTable.layout.rawValue),
                         "layoutAfter": .string(after.bucketTable.layout.rawValue), "visitors": .number(Double(visitors)),
                         "changed": .number(Double(changed)), "changedShare": .number(share),
                         "bucketedBefore": .number(Double(bucketedBefore)), "bucketedAfter": .number(Double(bucketedAfter))])
            if !json {
                print("\(before.key): \(changed) of \(visitors) visitors change variation (\(String(format: "%.2f", share * 100))%), "
                      + "bucketed \(bucketedBefore) -> \(bucketedAfter), layout \(before.bucketTable.layout.rawValue)"
                      + (before.bucketTable.layout == after.bucketTable.layout ? "" : " -> \(after.bucketTable.layout.rawValue)"))
            }
        }
        if json { print(Output.line(["experiences": .array(rows)])) }
        return 0
    }

    /// The sample-ratio check of every experience of `config`; exit status 0 whatever it finds.
    private static func sampleRatios(_ config: ProjectConfig, visitors: Int, json: Bool) -> Int32 {
        let checks = config.experiences.map { SampleRatioCheck(experience: $0, visitors: visitors) }
        if json {
            print(Output.line(["experiences": .array(checks.map(\.json))]))
        } else {
            for check in checks { print(check.text.joined(separator: "\n")) }
        }
        return 0
    }

    private static func load(_ path: String, option: String) throws -> ProjectConfig {
        let data = try Input.read(path, for: option)
        do throws(ConfigDecodingError) {
            return try ConfigDecoder.decode(data).config
        } catch {
            throw UsageError("--\(option) \(path): \(error.description)")
        }
    }
}
