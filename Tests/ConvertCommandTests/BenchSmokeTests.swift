import ConvertSwiftSDK
import ConvertTesting
import Foundation
import Testing

/// Runs the built `convert-bench` with tiny sizes: correct JSON and plausible numbers, never timings.
private func bench(_ arguments: [String]) async throws -> JSONValue {
    let binary = try #require(BuiltProducts.executable("convert-bench"), "convert-bench is built with the tests")
    let process = Process()
    process.executableURL = binary
    process.arguments = arguments
    let outcome = try await process.outcome()
    let data = outcome.out
    #expect(outcome.status == 0, "\(arguments)")
    let lines = data.split(separator: UInt8(ascii: "\n"))
    #expect(lines.count == 1, "one JSON line per sub-command")
    return try JSONDecoder().decode(JSONValue.self, from: lines.first ?? Data())
}

private func positive(_ value: JSONValue?) -> Bool {
    guard let number = value?.numberValue else { return false }
    return number > 0 && number.isFinite
}

@Suite(.serialized) struct BenchSmokeTests {
    @Test func decode() async throws {
        let result = try await bench(["decode", "--iterations", "3"])
        #expect(result["bench"] == "decode")
        #expect(result["config_bytes"] == 10476)
        #expect(positive(result["us_per_op"]))
    }

    @Test(arguments: ["persist", "nopersist", "file"])
    func decide(mode: String) async throws {
        let result = try await bench(["decide", "--visitors", "200", "--mode", mode])
        #expect(result["bench"] == "decide")
        #expect(result["visitors"] == 200)
        #expect(positive(result["ns_per_decision"]))
        #expect(positive(result["sticky_ns_per_decision"]))
        #expect(positive(result["max_rss_kb"]))
        let counts = try #require(result["variation_counts"]?.objectValue)
        #expect(counts.values.compactMap(\.numberValue).reduce(0, +) == 200)
        #expect(counts.keys.sorted() == ["1003142550-original-page", "1003142551-variation-1"])
    }

    @Test func decideOnTwoThreads() async throws {
        let result = try await bench(["decide", "--visitors", "200", "--threads", "2"])
        #expect(result["threads"] == 2)
        #expect(positive(result["decisions_per_second"]))
        #expect(positive(result["sticky_decisions_per_second"]))
        #expect(positive(result["async_sticky_ns_per_decision"]))
        let counts = try #require(result["variation_counts"]?.objectValue)
        #expect(counts.values.compactMap(\.numberValue).reduce(0, +) == 200, "every visitor decided once, whatever the thread")
    }

    @Test func features() async throws {
        let result = try await bench(["features", "--iterations", "6"])
        #expect(result["bench"] == "features")
        #expect(positive(result["ns_per_call"]))
        #expect(positive(result["async_ns_per_call"]))
    }

    @Test func request() async throws {
        let result = try await bench(["request", "--iterations", "8"])
        #expect(result["bench"] == "request")
        #expect(result["requests"] == 8)
        #expect(positive(result["new_ns_per_request"]))
        #expect(positive(result["returning_ns_per_request"]))
        #expect(result["tracking"] == false)
    }

    @Test func requestWithTracking() async throws {
        let result = try await bench(["request", "--iterations", "8", "--tracking", "on"])
        #expect(result["tracking"] == true)
        #expect(positive(result["new_cpu_ns_per_request"]))
        #expect(positive(result["returning_cpu_ns_per_request"]))
    }

    @Test func hash() async throws {
        let result = try await bench(["hash", "--hash-strings", "1000"])
        #expect(result["bench"] == "hash")
        #expect(result["strings"] == 1000)
        #expect(positive(result["ns_per_hash_string"]))
        #expect(positive(result["mb_per_s_string"]))
    }

    @Test func track() async throws {
        let result = try await bench(["track", "--visitors", "300"])
        #expect(result["bench"] == "track")
        #expect(result["events"] == 300)
        #expect(positive(result["ns_per_enqueue"]))
        #expect(positive(result["events_per_s_delivered"]))
    }

    @Test func ready() async throws {
        let result = try await bench(["ready", "--iterations", "2"])
        #expect(result["bench"] == "ready")
        #expect(positive(result["ms"]))
        #expect((result["ms"]?.numberValue ?? 10_000) < 5_000, "ready from cache never waits for the network")
    }

    @Test func breakdown() async throws {
        let result = try await bench(["breakdown", "--visitors", "100", "--iterations", "2"])
        #expect(result["bench"] == "breakdown")
        #expect(result["found"] == 100, "every visitor decided in the warm-up pass is in the store")
        for field in ["create_context_ns", "create_and_set_properties_ns", "whole_sticky_decision_ns",
                      "run_on_built_context_ns", "store_lookup_ns"] {
            #expect(positive(result[field]), "\(field)")
        }
    }

    @Test func customWorkload() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let workload = directory.appendingPathComponent("workload.json")
        try Data(#"{"experienceKey": "test-experience-ab-fullstack-4", "attributes": {}, "locationProperties": {"location": "pricing"}, "visitorPrefix": "w-", "visitors": 50}"#.utf8)
            .write(to: workload)
        let result = try await bench(["decide", "--workload", workload.path])
        let counts = try #require(result["variation_counts"]?.objectValue)
        #expect(Set(counts.keys) == ["original", "variation-1"])
        #expect(result["visitors"] == 50)
    }
}
