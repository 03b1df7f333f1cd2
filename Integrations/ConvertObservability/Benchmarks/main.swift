// convert-hooks-bench: what the metrics and tracing hooks add to a decision, one JSON line per case.
// Build it in release: swift run -c release convert-hooks-bench [--iterations N] [--rounds N]
//
// A returning visitor's `variation` plus `features()` (seven evaluations with the sample config),
// without hooks and with each hook in each situation a server meets: outside any trace, inside a
// span that records nothing (what a framework's tracing middleware makes with no tracer
// bootstrapped), and inside a recording span (swift-distributed-tracing's in-memory tracer). The
// cases alternate round by round, so a drift of the machine's speed weighs on all alike; each
// prints the median of its rounds.
import ConvertMetrics
import ConvertSwiftSDK
import ConvertTracing
import Foundation
import InMemoryTracing
import Instrumentation
import Metrics
import Tracing

func option(_ name: String, default value: Int) -> Int {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: "--\(name)") else { return value }
    guard index + 1 < arguments.count, let number = Int(arguments[index + 1]), number > 0 else {
        FileHandle.standardError.write(Data("convert-hooks-bench: --\(name) needs a positive number\n".utf8))
        exit(2)
    }
    return number
}

let iterations = option("iterations", default: 20_000)
let rounds = option("rounds", default: 5)

/// One measured situation: the SDK's hooks, and how each call is wrapped.
struct Case {
    let name: String
    let sdk: ConvertSwiftSDK
    let context: ConvertContext
    let wrap: Wrap
}

func readySDK(_ hooks: [any EvaluationHook]) async throws -> (ConvertSwiftSDK, ConvertContext) {
    let sdk = ConvertSwiftSDK(configData: ConvertSwiftSDK.sampleConfig,
                              configuration: ConvertConfiguration(sdkKey: "", networkTracking: false, persistence: .memory),
                              logSink: SilentLogSink())
    try await sdk.ready()
    for hook in hooks { sdk.addHook(hook) }
    let context = sdk.createContext(visitorId: "returning-visitor", attributes: ["desktop": true, "browser": "FF"])
    context.setLocationProperties(["location": "pricing"])
    return (sdk, context)
}

let recording = InMemoryTracer()
typealias Wrap = @Sendable (_ calls: () -> Int) -> Int
let situations: [(name: String, hooks: [any EvaluationHook], wrap: Wrap)] = [
    ("none", [], { $0() }),
    ("metrics", [MetricsHook()], { $0() }),
    ("tracing outside a trace", [TracingHook()], { $0() }),
    ("tracing in a span recording nothing", [TracingHook()], { calls in NoOpTracer().withSpan("GET /") { _ in calls() } }),
    // One span per request, as a server has; finished spans are dropped so memory stays flat.
    ("tracing in a recording span", [TracingHook(tracer: recording)], { calls in
        defer { recording.clearFinishedSpans() }
        return recording.withSpan("GET /") { _ in calls() }
    }),
]
var cases: [Case] = []
for situation in situations {
    let (sdk, context) = try await readySDK(situation.hooks)
    cases.append(Case(name: situation.name, sdk: sdk, context: context, wrap: situation.wrap))
}

/// Nanoseconds per request (`variation` and `features()`), `count` requests of `measured`.
func measure(_ measured: Case, count: Int) -> Double {
    var answers = 0
    let start = ContinuousClock.now
    for _ in 0..<count {
        answers &+= measured.wrap {
            let variation = measured.context.variation(forExperience: "test-experience-ab-fullstack-1")
            return (variation == nil ? 0 : 1) + measured.context.features().count
        }
    }
    let elapsed = ContinuousClock.now - start
    precondition(answers > 0)
    let (seconds, attoseconds) = elapsed.components
    return (Double(seconds) * 1e9 + Double(attoseconds) / 1e9) / Double(count)
}

for measured in cases { _ = measure(measured, count: min(iterations, 2_000)) }   // warm-up
var samples = [String: [Double]]()
for round in 0..<rounds {
    let order = round % 2 == 0 ? cases : cases.reversed()
    for measured in order { samples[measured.name, default: []].append(measure(measured, count: iterations)) }
}
let baseline = samples["none"]!.sorted()[rounds / 2]
for measured in cases {
    let median = samples[measured.name]!.sorted()[rounds / 2]
    let line: [String: Any] = ["bench": "hooks", "case": measured.name, "requests": iterations, "rounds": rounds,
                               "ns_per_request": Int(median.rounded()), "added_ns": Int((median - baseline).rounded())]
    let data = try JSONSerialization.data(withJSONObject: line, options: [.sortedKeys])
    print(String(decoding: data, as: UTF8.self))
}
