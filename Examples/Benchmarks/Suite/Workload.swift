import ConvertSwiftSDK
import Foundation

/// What a benchmark runs on: `--workload FILE` or the bundled default.
struct Workload {
    var configData: Data
    var configPath: String
    var experienceKey = "test-experience-ab-fullstack-1"
    var experienceId = "100334665"
    var attributes: [String: JSONValue] = ["desktop": "true", "browser": "FF"]
    var locationProperties: [String: JSONValue] = ["location": "pricing", "feature": "3"]
    var visitorPrefix = "bench-visitor-"
    var visitors = 100_000
    var hashStrings = 1_000_000

    static func load(_ path: String?) throws -> Workload {
        var workload = Workload(configData: ConvertSwiftSDK.sampleConfig, configPath: "ConvertSwiftSDK.sampleConfig")
        guard let path else { return workload }
        let json = try JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        guard case .object(let fields) = json else { throw BenchError("the workload must be a JSON object") }
        if let config = fields["config"]?.stringValue {
            let url = URL(fileURLWithPath: config, relativeTo: URL(fileURLWithPath: path).deletingLastPathComponent())
            workload.configData = try Data(contentsOf: url)
            workload.configPath = url.path
        }
        if let v = fields["experienceKey"]?.stringValue { workload.experienceKey = v }
        if let v = fields["experienceId"]?.stringValue { workload.experienceId = v }
        if let v = fields["attributes"]?.objectValue { workload.attributes = v }
        if let v = fields["locationProperties"]?.objectValue { workload.locationProperties = v }
        if let v = fields["visitorPrefix"]?.stringValue { workload.visitorPrefix = v }
        if let v = fields["visitors"]?.numberValue { workload.visitors = Int(v) }
        if let v = fields["hashStrings"]?.numberValue { workload.hashStrings = Int(v) }
        return workload
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Peak resident memory of this process, in kilobytes.
func maxRSSKilobytes() -> Int {
    var usage = rusage()
    #if canImport(Glibc)
    getrusage(RUSAGE_SELF.rawValue, &usage)
    #else
    getrusage(RUSAGE_SELF, &usage)
    #endif
    return Int(usage.ru_maxrss)
}

/// Current resident memory, in kilobytes (from /proc where available).
func currentRSSKilobytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return maxRSSKilobytes() }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
    }
    return 0
}

func nanoseconds(_ duration: Duration) -> Double {
    let (seconds, attoseconds) = duration.components
    return Double(seconds) * 1e9 + Double(attoseconds) / 1e9
}

func emit(_ fields: [String: JSONValue]) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    print(String(decoding: try! encoder.encode(JSONValue.object(fields)), as: UTF8.self))
}

func rounded(_ value: Double, _ places: Int = 1) -> JSONValue {
    let scale = pow(10, Double(places))
    return .number((value * scale).rounded() / scale)
}
