import ConvertBucketing
import ConvertSwiftSDK
import ConvertTesting
import Foundation
import Testing
@testable import convert

@Suite struct ChiSquareTests {
    @Test(arguments: [
        (3.84, 1, 0.0500435),     // the 5% critical value of one degree of freedom
        (10.83, 1, 0.0009987),    // the 0.1% critical value
        (9.49, 4, 0.0499531),     // the 5% critical value of four
        (5.991, 2, 0.0500116),
        (1.0, 1, 0.3173105),      // erfc(1/√2)
        (4.0, 2, 0.1353353),      // e^-2: two degrees of freedom are an exponential
        (20.0, 10, 0.0292527),
        (0.5, 3, 0.9188914),      // the series side (x < a + 1)
    ])
    func survivalMatchesTables(chiSquare: Double, degreesOfFreedom: Int, expected: Double) {
        let p = SampleRatioCheck.survival(chiSquare: chiSquare, degreesOfFreedom: degreesOfFreedom)
        #expect(abs(p - expected) < 2e-6, "Q(\(degreesOfFreedom)/2, \(chiSquare)/2) = \(p), expected \(expected)")
    }

    @Test func edges() {
        #expect(SampleRatioCheck.survival(chiSquare: 0, degreesOfFreedom: 3) == 1)
        #expect(SampleRatioCheck.survival(chiSquare: .infinity, degreesOfFreedom: 1) == 0)
        let far = SampleRatioCheck.survival(chiSquare: 200, degreesOfFreedom: 1)
        #expect(far >= 0 && far < 1e-40)
    }

    @Test func aSkewedSplitIsAMismatchWithAWarningLine() {
        let check = SampleRatioCheck(experienceKey: "skewed", layout: .packed, visitors: 1000, arms: [
            .init(variationId: "a", variationKey: "control", expectedShare: 0.5, observed: 600),
            .init(variationId: "b", variationKey: nil, expectedShare: 0.5, observed: 400),
        ])
        #expect(abs(check.chiSquare - 40) < 1e-9)
        #expect(check.degreesOfFreedom == 1)
        #expect(check.pValue < 1e-9)
        #expect(check.isMismatch)
        #expect(check.text.contains { $0.contains("WARNING: sample ratio mismatch in skewed (p < 0.001)") })
        #expect(check.json["sampleRatioMismatch"] == .bool(true))

        let fair = SampleRatioCheck(experienceKey: "fair", layout: .packed, visitors: 1000, arms: [
            .init(variationId: "a", variationKey: nil, expectedShare: 0.5, observed: 510),
            .init(variationId: "b", variationKey: nil, expectedShare: 0.5, observed: 490),
        ])
        #expect(!fair.isMismatch)
        #expect(!fair.text.contains { $0.contains("WARNING") })
    }
}

@Suite(.serialized) struct SampleRatioCommandTests {
    /// The sample config with the first experience's arms at 20% and 30%: half the traffic in no variation.
    private func partialConfig(in directory: URL) throws -> String {
        let url = directory.appendingPathComponent("partial.json")
        try Fixtures.baselineReallocated([20, 30]).write(to: url)
        return url.path
    }

    @Test func eachExperiencesSplitIsCheckedAgainstItsAllocation() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("srm-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = try partialConfig(in: directory)

        let result = try await convert(["simulate", "--config", path, "--visitors", "5000", "--json"])
        #expect(result.status == 0, "\(result.err)")
        let output = try JSONDecoder().decode(JSONValue.self, from: Data(result.out.utf8))
        let rows = try #require(output["experiences"]?.arrayValue)
        #expect(rows.count == 4)
        let row = try #require(rows.first { $0["experienceKey"] == "test-experience-ab-fullstack-1" })
        let arms = try #require(row["arms"]?.arrayValue)
        #expect(arms.map { $0["variationId"] } == ["1003142550", "1003142551", .null])
        #expect(arms.map { $0["expectedShare"] } == [0.2, 0.3, 0.5])

        // The counts, worked out here from the bucketing alone.
        let table = BucketTable(arms: [BucketArm(id: "1003142550", trafficAllocation: 20),
                                       BucketArm(id: "1003142551", trafficAllocation: 30)], layout: .packed)
        var counts = ["1003142550": 0, "1003142551": 0, "none": 0]
        for i in 0..<5000 {
            counts[table.variation(experienceId: "100334665", visitorId: "srm-\(i)") ?? "none", default: 0] += 1
        }
        let observed = [counts["1003142550"]!, counts["1003142551"]!, counts["none"]!]
        #expect(arms.map { $0["observed"] } == observed.map { .number(Double($0)) })
        let expected = [1000.0, 1500.0, 2500.0]
        let chiSquare = zip(observed, expected).reduce(0) { $0 + (Double($1.0) - $1.1) * (Double($1.0) - $1.1) / $1.1 }
        #expect(abs((row["chiSquare"]?.numberValue ?? -1) - chiSquare) < 1e-9)
        #expect(row["degreesOfFreedom"] == 2)
        // Two degrees of freedom: the p-value is e^(-χ²/2).
        #expect(abs((row["pValue"]?.numberValue ?? -1) - exp(-chiSquare / 2)) < 1e-9)
        #expect(row["sampleRatioMismatch"] == .bool(false), "the hash follows the allocation")

        let text = try await convert(["simulate", "--config", path, "--visitors", "5000"])
        #expect(text.status == 0)
        #expect(text.out.contains("test-experience-ab-fullstack-1: 5000 visitors, layout packed"))
        #expect(text.out.contains("  1003142550-original-page (1003142550): expected 20.00%, observed \(observed[0])"))
        #expect(text.out.contains("  no variation: expected 50.00%, observed \(observed[2])"))
        #expect(text.out.contains(String(format: "chi-square %.4f, df 2, p ", chiSquare)))
        #expect(!text.out.contains("WARNING"))
    }

    @Test func theDefaultIsTenThousandVisitorsAndTheComparisonModeIsUnchanged() async throws {
        let config = try Fixtures.url(.cdnConfigBaseline).path
        let result = try await convert(["simulate", "--config", config, "--json"])
        #expect(result.status == 0, "\(result.err)")
        let output = try JSONDecoder().decode(JSONValue.self, from: Data(result.out.utf8))
        let rows = try #require(output["experiences"]?.arrayValue)
        #expect(rows.allSatisfy { $0["visitors"] == 10_000 && $0["degreesOfFreedom"] == 1 })
        #expect(rows.allSatisfy { $0["arms"]?.arrayValue?.count == 2 }, "50/50 arms leave no traffic out")

        let compared = try await convert(["simulate", "--config", config, "--after", config, "--visitors", "100", "--json"])
        let same = try JSONDecoder().decode(JSONValue.self, from: Data(compared.out.utf8))
        #expect(same["experiences"]?.arrayValue?.allSatisfy { $0["changed"] == 0 && $0["arms"] == nil } == true)
    }
}
