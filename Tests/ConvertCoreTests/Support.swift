import ConvertBucketing
import ConvertCore
import ConvertModel
import ConvertRules
import ConvertTesting
import Foundation
import Testing

/// Attributes that satisfy the baseline's permanent audience, and a location that matches.
let qualifying: [String: JSONValue] = ["desktop": "true", "browser": "FF"]
let pricing: [String: JSONValue] = ["location": "pricing"]

/// A started harness on a fixture (or on mutated fixture JSON).
func started(_ fixture: Fixtures.File = .cdnConfigBaseline, environment: String? = nil,
             networkTracking: Bool = true, mutate: ((inout [String: Any]) throws -> Void)? = nil) async throws -> TestSDK {
    var data = try Fixtures.data(fixture)
    if let mutate {
        var json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        try mutate(&json)
        data = try JSONSerialization.data(withJSONObject: json)
    }
    let harness = TestSDK(data: data, configuration: ConvertConfiguration(
        sdkKey: "test-key", environment: environment, networkTracking: networkTracking))
    try await harness.sdk.ready(timeout: .patience)
    return harness
}

/// A context on the baseline that qualifies for test-experience-ab-fullstack-1.
func qualifyingContext(_ harness: TestSDK, _ visitorId: String) -> ConvertContext {
    let context = harness.sdk.createContext(visitorId: visitorId, attributes: qualifying)
    context.setLocationProperties(pricing)
    return context
}

/// The variation bucketing alone gives a visitor, from the fixture's own numbers.
func expectedVariation(_ config: ProjectConfig, experienceKey: String, visitorId: String) throws -> String? {
    let experience = try #require(config.experience(key: experienceKey))
    let arms = experience.variations.map { BucketArm(id: $0.id, trafficAllocation: $0.trafficAllocation, isActive: $0.isActive) }
    let table = BucketTable(arms: arms, layout: BucketLayout(version: experience.version))
    return table.variation(forValue: BucketValue.of(experienceId: experience.id, visitorId: visitorId))
}

/// Edits one element of a JSON array of objects in place.
func edit(_ json: inout [String: Any], _ collection: String, at index: Int, _ change: (inout [String: Any]) -> Void) throws {
    var items = try #require(json[collection] as? [[String: Any]])
    change(&items[index])
    json[collection] = items
}
