// README's "Using the SDK" code follows the next line verbatim; that line handles --help
// and --version, which the snippet does not.
ExampleOptions.handle()
import ConvertSwiftSDK

// The SDK's built-in sample config (a real project's), so this runs as pasted, offline, with
// tracking off. With your SDK key the config comes from Convert's CDN and events go to your
// project: ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "accountId/projectId")).
let sdk = ConvertSwiftSDK(configData: ConvertSwiftSDK.sampleConfig,
                          configuration: ConvertConfiguration(sdkKey: "", networkTracking: false, persistence: .memory))
try await sdk.ready(timeout: .seconds(5))

// Subscribe before deciding: events are not replayed to later subscribers.
let bucketing = sdk.events(.bucketing)

let context = sdk.createContext(visitorId: "visitor-42", attributes: ["desktop": true, "browser": "FF"])
context.setLocationProperties(["location": "pricing"])

// Decisions are synchronous: call them from any thread, a SwiftUI body or a request handler.
if let variation = context.variation(forExperience: "test-experience-ab-fullstack-1") {
    print("show", variation.keyOrId)
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

// The first bucketing event (sdk.subscribe(to: .bucketing) { info in … } is the callback form).
for await info in bucketing {
    print("bucketed", info.visitorId, "→", info.variationKey ?? info.variationId)
    break
}

// Tracking is asynchronous: conversions are deduplicated per visitor and sent in batches.
// With tracking off, as here, a conversion is recorded (for deduplication) but not sent: the
// result is .trackingDisabled and no .conversion event fires.
let result = await context.trackConversion("button-primary-click", goalData: [GoalDataItem(.amount, 19.99)])
print(result)
print(await sdk.shutdown(timeout: .seconds(5)))
