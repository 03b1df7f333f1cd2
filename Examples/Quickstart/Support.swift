import ConvertBucketing
import ConvertSwiftSDK
import Foundation

struct QuickstartOptions {
    static let usage = "usage: quickstart [--visitors N] [--environment ENV] [--sdk-key KEY]"
    var visitors = 300
    var environment: String?
    var sdkKey: String?
    var problem: String?

    init(_ arguments: ArraySlice<String>) {
        var rest = Array(arguments)
        while !rest.isEmpty {
            let name = rest.removeFirst()
            guard name.hasPrefix("--"), !rest.isEmpty else {
                problem = name.hasPrefix("--") ? "\(name) needs a value" : "unexpected argument \"\(name)\""
                return
            }
            let value = rest.removeFirst()
            switch name {
            case "--visitors":
                guard let n = Int(value), n > 0 else {
                    problem = "--visitors must be a positive whole number"
                    return
                }
                visitors = n
            case "--environment": environment = value
            case "--sdk-key": sdkKey = value
            default:
                problem = "unknown option \(name)"
                return
            }
        }
    }
}

/// Deterministic visitors with varied attributes and locations.
struct SyntheticVisitor {
    let id: String
    let attributes: [String: JSONValue]
    let location: [String: JSONValue]

    init(index i: Int) {
        id = "quickstart-visitor-\(i)"
        attributes = [
            "desktop": i % 4 == 0 ? "false" : "true",
            "mobile": .bool(i % 4 == 0),
            "browser": ["FF", "CH", "SF", "ED"][i % 4 == 1 ? 1 : (i % 3)],
            "plan": i % 5 == 0 ? "premium" : "free",
        ]
        let places: [[String: JSONValue]] = [["location": "pricing"], ["location": "events"], ["location": "statistics"],
                                             ["screen": "home"], ["feature": .number(Double(i % 8))]]
        location = places[i % places.count]
    }
}

/// Tallies and prints what the visitors got.
struct Report {
    let config: ProjectConfig
    private var variationCounts: [String: [String: Int]] = [:]
    private var notBucketed: [String: Int] = [:]
    private var featuresOn: [String: Int] = [:]
    private var featuresOff: [String: Int] = [:]
    private var conversions: [String: Int] = [:]

    init(config: ProjectConfig) { self.config = config }

    mutating func record(experience: String, variation: BucketedVariation?) {
        if let variation {
            variationCounts[experience, default: [:]][variation.id, default: 0] += 1
        } else {
            notBucketed[experience, default: 0] += 1
        }
    }

    mutating func record(feature: BucketedFeature) {
        if feature.isEnabled { featuresOn[feature.key, default: 0] += 1 } else { featuresOff[feature.key, default: 0] += 1 }
    }

    mutating func record(conversion: ConversionResult) {
        let name: String
        switch conversion {
        case .tracked: name = "tracked"
        case .duplicate: name = "duplicate"
        default: name = "\(conversion)"
        }
        conversions[name, default: 0] += 1
    }

    func render(visitors: Int, environment: String, counters: TrackingCounters, batches: Int, file: String?) -> String {
        var out = ["ConvertSwiftSDK quickstart — project \(config.project.name ?? config.project.id) "
                   + "(account \(config.accountId)), environment \(environment), \(visitors) visitors", "", "Experiences"]
        for experience in config.experiences {
            let counts = variationCounts[experience.key] ?? [:]
            let bucketed = counts.values.reduce(0, +)
            let layout = experience.bucketTable.layout.rawValue
            let env = experience.environment.map { ", runs in \($0)" } ?? ""
            out.append("  \(experience.key)  [\(layout)\(experience.version.map { ", version \(JavaScriptNumber.string($0))" } ?? "")\(env)]  "
                       + "bucketed \(bucketed) of \(visitors)")
            let total = experience.variations.filter(\.isActive).reduce(0.0) { $0 + ($1.trafficAllocation ?? 100) }
            for variation in experience.variations {
                let configured = variation.isActive && total > 0 ? (variation.trafficAllocation ?? 100) / total * 100 : 0
                let got = counts[variation.id] ?? 0
                let share = bucketed > 0 ? Double(got) / Double(bucketed) * 100 : 0
                out.append("    \(pad(variation.key ?? variation.id, 30)) configured \(percent(configured))  got \(percent(share)) (\(got))")
            }
        }
        out.append("")
        out.append("Features")
        for feature in config.features {
            out.append("  \(pad(feature.key, 26)) on \(featuresOn[feature.key] ?? 0), off \(featuresOff[feature.key] ?? 0)")
        }
        out.append("")
        out.append("Conversions: " + conversions.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        out.append("Tracking: enqueued \(counters.enqueued), sent \(counters.sent) in \(batches) batches, "
                   + "retried \(counters.retried), dropped \(counters.dropped), pending \(counters.pending)")
        if let file { out.append("Batches written to \(file)") }
        return out.joined(separator: "\n")
    }

    private func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    private func percent(_ value: Double) -> String {
        String(format: "%5.1f%%", value)
    }
}
