import ConvertBucketing
import ConvertSwiftSDK
import Foundation

/// The command line: `--name value` options and a few switches.
struct QuickstartOptions {
    static let usage = """
    usage: quickstart [--visitors N] [--environment ENV]
                      [--sdk-key KEY [--sdk-key-secret SECRET] [--send] [--endpoint URL]]
           quickstart --help | --version

    Runs N synthetic visitors (default 300) through a project's config: experiences, features,
    and a conversion for every third visitor, then prints a report.

    Without --sdk-key: the config bundled with the example, offline; tracking batches are
    written to a local file, nothing leaves the machine.

    With --sdk-key: the project's live config from Convert's CDN. Decisions only: nothing is
    tracked unless --send is given, because the synthetic visitors would appear in the
    project's reports. With --send the bucketing and conversion events are sent to the
    project and the report says how many, with the delivery report of shutdown.
    The secret, if the project needs one, may come from the environment variable
    CONVERT_SDK_KEY_SECRET instead of --sdk-key-secret (the flag wins); it is never printed.
    --endpoint replaces both the config and the tracking base URL (for a local server).
    """
    static let secretVariable = "CONVERT_SDK_KEY_SECRET"

    var visitors = 300
    var environment: String?
    var sdkKey: String?
    var sdkKeySecret: String?
    var endpoint: String?
    var send = false
    var help = false
    var version = false
    /// Why the command line is not usable, naming the argument.
    var problem: String?

    init(_ arguments: ArraySlice<String>, processEnvironment variables: [String: String] = ProcessInfo.processInfo.environment) {
        var rest = Array(arguments)
        while !rest.isEmpty {
            let name = rest.removeFirst()
            switch name {
            case "--help", "-h": help = true; continue
            case "--version": version = true; continue
            case "--send": send = true; continue
            case "--visitors", "--environment", "--sdk-key", "--sdk-key-secret", "--endpoint": break
            default:
                problem = name.hasPrefix("-") ? "unknown option \(name)" : "unexpected argument \"\(name)\""
                return
            }
            guard !rest.isEmpty else {
                problem = "\(name) needs a value"
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
            case "--sdk-key-secret": sdkKeySecret = value
            default: endpoint = value
            }
        }
        guard sdkKey != nil else {
            // Offline, these options would silently do nothing.
            for (given, option) in [(send, "--send"), (sdkKeySecret != nil, "--sdk-key-secret"), (endpoint != nil, "--endpoint")]
            where given {
                problem = "\(option) needs --sdk-key (without a key the bundled config runs offline)"
                return
            }
            return
        }
        if sdkKeySecret == nil, let secret = variables[Self.secretVariable], !secret.isEmpty { sdkKeySecret = secret }
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

    /// The report of decisions and conversions; the caller adds what happened to tracking.
    func render(visitors: Int, environment: String) -> String {
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
                out.append("    \(pad(variation.keyOrId, 30)) configured \(percent(configured))  got \(percent(share)) (\(got))")
            }
        }
        out.append("")
        out.append("Features")
        for feature in config.features {
            out.append("  \(pad(feature.key, 26)) on \(featuresOn[feature.key] ?? 0), off \(featuresOff[feature.key] ?? 0)")
        }
        out.append("")
        out.append("Conversions: " + conversions.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        return out.joined(separator: "\n")
    }

    private func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    private func percent(_ value: Double) -> String {
        String(format: "%5.1f%%", value)
    }
}
