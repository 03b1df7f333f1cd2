import ConvertCore
import ConvertModel
import ConvertRules
import ConvertTesting
import Foundation
import Testing

@Suite struct FeatureTests {
    @Test func featureCarriedByTheDecidedVariation() async throws {
        let harness = try await started()
        let context = qualifyingContext(harness, "feat")
        let feature = await context.runFeature("feature-1")
        #expect(feature.status == .enabled)
        #expect(feature.id == "10031")
        #expect(feature.experienceKey == "test-experience-ab-fullstack-1")
        let variation = await context.runExperience("test-experience-ab-fullstack-1")
        #expect(feature.variationId == variation?.id)
        let caption = variation?.id == "1003142550" ? "Click this" : "Click that"
        #expect(feature.variables == ["enabled": false, "caption": .string(caption)])
        #expect(feature.bool("enabled") == false)
        #expect(feature.string("caption") == caption)
        #expect(feature.int("missing") == nil)
    }

    @Test func featuresThatNoDecisionCarriesAreDisabled() async throws {
        let harness = try await started()
        let outsider = harness.sdk.createContext(visitorId: "outsider")
        #expect(await outsider.runFeature("feature-1").status == .disabled)
        let context = qualifyingContext(harness, "feat2")
        #expect(await context.runFeature("not-attached-feature-3").status == .disabled)
        let unknown = await context.runFeature("no-such-feature")
        #expect(unknown.status == .disabled)
        #expect(unknown.id == nil)
        #expect(harness.logs.contains("no feature has the key \"no-such-feature\""))
    }

    @Test func runFeaturesListsEveryDeclaredFeature() async throws {
        let harness = try await started()
        let context = qualifyingContext(harness, "all-features")
        let features = await context.runFeatures()
        #expect(features.map(\.key) == ["feature-1", "feature-4", "feature-5", "button", "feature-2", "not-attached-feature-3"])
        #expect(features.filter(\.isEnabled).map(\.key) == ["feature-1", "feature-2"])
        let feature2 = try #require(features.first { $0.key == "feature-2" })
        #expect(feature2.double("price") == 100)
        #expect(feature2.int("button-height") == 40)
        #expect(feature2.json("additionalData") == ["foo": "bar", "v": 2])
        #expect(harness.sink.events(for: "all-features").count == 2, "each carrier decided once")
    }

    @Test func aCallWithManyCarriersDecidesEachOnceAndKeepsThemApart() async throws {
        // Eight clones of a two-feature experience; the first six require a location the
        // visitor is not on, so both features come from the seventh.
        let harness = try await started { json in
            let experiences = try #require(json["experiences"] as? [[String: Any]])
            let template = try #require(experiences.first { $0["key"] as? String == "test-experience-ab-fullstack-4" })
            json["experiences"] = (0..<8).map { i -> [String: Any] in
                var clone = template
                clone["id"] = "9000\(i)"
                clone["key"] = "carrier-\(i)"
                clone["locations"] = [i < 6 ? "1003350" : "1003352"]
                clone["variations"] = ((template["variations"] as? [[String: Any]]) ?? []).enumerated().map { v, variation in
                    var variation = variation
                    variation["id"] = "9000\(i)\(v)"
                    variation["changes"] = [
                        ["type": "fullStackFeature", "data": ["feature_id": 10031, "variables_data": ["enabled": true, "caption": "carrier-\(i)"]]],
                        ["type": "fullStackFeature", "data": ["feature_id": 100334, "variables_data": ["price": i, "button-height": v]]],
                    ]
                    return variation
                }
                return clone
            }
        }
        let context = qualifyingContext(harness, "many-carriers")
        let features = Dictionary(uniqueKeysWithValues: context.features().map { ($0.key, $0) })
        #expect(features["feature-1"]?.experienceKey == "carrier-6")
        #expect(features["feature-1"]?.string("caption") == "carrier-6")
        #expect(features["feature-2"]?.experienceKey == "carrier-6")
        #expect(features["feature-2"]?.double("price") == 6)
        #expect(features["feature-1"]?.variationId == features["feature-2"]?.variationId)
        #expect(harness.sink.events(for: "many-carriers").count == 1, "one carrier bucketed, once")
        // One feature at a time, on another context, gives the same (the decisions are sticky).
        let again = qualifyingContext(harness, "many-carriers")
        for key in ["feature-1", "feature-2"] {
            let single = again.feature(key)
            #expect(single.experienceKey == features[key]?.experienceKey && single.variationId == features[key]?.variationId)
            #expect(single.variables == features[key]?.variables)
        }
    }

    @Test func resultsCompareByTheirFieldsAcrossInstalledConfigs() async throws {
        let first = try await started(), second = try await started()
        var seen: Set<BucketedFeature> = []
        var variations: Set<String> = []
        for i in 0..<12 {
            let a = qualifyingContext(first, "equal-\(i)").feature("feature-1")
            let b = qualifyingContext(second, "equal-\(i)").feature("feature-1")
            #expect(a == b && a.hashValue == b.hashValue, "the same result from two SDKs")
            seen.insert(a)
            variations.insert(a.variationId ?? "")
        }
        #expect(seen.count == variations.count, "results with other variations differ")
        #expect(variations.count == 2)
    }

    @Test func printingAResultShowsItsFields() async throws {
        let feature = qualifyingContext(try await started(), "printed").feature("feature-1")
        let labels = Mirror(reflecting: feature).children.map(\.label)
        #expect(labels == ["key", "id", "name", "status", "experienceId", "experienceKey", "variationId", "variationKey",
                           "variables"])
        let printed = String(describing: feature)
        #expect(printed.hasPrefix("BucketedFeature(key: \"feature-1\""), "\(printed)")
        #expect(printed.contains("variationId: Optional(\"\(feature.variationId ?? "")\")"), "\(printed)")
    }

    @Test func stringTypedVariablesAreCastTheJavaScriptWay() async throws {
        let harness = try await started(.jsSDKTestConfig)
        var enabled: [String: BucketedFeature] = [:]
        for i in 0..<20 {
            let context = harness.sdk.createContext(visitorId: "cast-\(i)", attributes: ["varName3": "something"])
            context.setLocationProperties(["url": "https://convert.com/"])
            let feature = await context.runFeature("feature-2")
            if feature.isEnabled { enabled[feature.variationId!] = feature }
            let raw = await context.runFeature("feature-2", typeCasting: false)
            if raw.isEnabled {
                #expect(raw.variables["additionalData"] == .string("{\"foo\":\"bar\",\"v\":2}"))
            }
            let flag = await context.runFeature("feature-1")
            #expect(flag.isEnabled)
            #expect(flag.variables["enabled"] == .bool(flag.variationKey == "100299456-original-page"))
        }
        let cast = try #require(enabled.values.first)
        #expect(cast.variables["price"] == 100)
        #expect(cast.variables["button-height"] == 40)
        #expect(cast.variables["additionalData"] == ["foo": "bar", "v": 2])
    }

    static let castingCases: [(JSONValue, VariableType, JSONValue)] = [
        ("true", .boolean, true), ("false", .boolean, false), ("yes", .boolean, true), ("", .boolean, false),
        (0, .boolean, false), ("42px", .integer, 42), ("  -7.9", .integer, -7), (true, .integer, 1),
        ("0x1A", .integer, 26), ("abc", .integer, nil), (12.75, .integer, 12), ("3.5e2x", .float, 350),
        (false, .float, 0), (".5", .float, 0.5), ("x", .float, nil), (30, .string, "30"), (true, .string, "true"),
        ("[1,2]", .json, [1, 2]), ("not json", .json, "not json"), (["a": 1], .json, ["a": 1]),
        ("kept", .other("vector"), "kept"),
    ]

    @Test(arguments: castingCases)
    func javaScriptCasting(value: JSONValue, type: VariableType, expected: JSONValue) {
        #expect(FeatureCasting.cast(value, to: type) == expected)
    }
}
