import ConvertSwiftSDK
import Foundation

// A project's config, as Convert serves it: here the copy bundled with the quickstart, so this
// runs offline, with tracking off. With an SDK key the config comes from Convert's CDN and
// events go to your project: ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: key)).
let configURL = URL(fileURLWithPath: "Examples/Quickstart/Resources/cdn-config.json")
let sdk = ConvertSwiftSDK(configData: try Data(contentsOf: configURL),
                          configuration: ConvertConfiguration(sdkKey: "", networkTracking: false, persistence: .memory))
try await sdk.ready(timeout: .seconds(5))

let context = sdk.createContext(visitorId: "visitor-42", attributes: ["desktop": true, "browser": "FF"])
context.setLocationProperties(["location": "pricing"])

// Decisions are synchronous: call them from any thread, a SwiftUI body or a request handler.
if let variation = context.variation(forExperience: "test-experience-ab-fullstack-1") {
    print("show", variation.key ?? variation.id)
}
let feature = context.feature("feature-2")
if feature.isEnabled, let price = feature.double("price") {
    print("price", price)
}
print(context.features().filter(\.isEnabled).map(\.key))

// Why did (or didn't) this visitor get a variation?
for step in context.explanation(forExperience: "sample_ab_test").steps {
    print(step)
}

// Tracking is asynchronous: conversions are deduplicated per visitor and sent in batches.
let result = await context.trackConversion("button-primary-click", goalData: [GoalDataItem(.amount, 19.99)])
print(result)

let token = await sdk.on(.bucketing) { payload in
    if case let .bucketing(info) = payload { print(info.visitorId, "→", info.variationId) }
}
await sdk.off(token)
print(await sdk.shutdown(timeout: .seconds(5)))
