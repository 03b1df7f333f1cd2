// The Linux-applicable code of the seed documents' Initialization and Event System pages,
// kept as written there (apart from the app scaffolding), compiled and run against the package.
import ConvertSwiftSDK
import ConvertTesting
import Foundation
import Testing

/// The seed code starts SDKs with file persistence and no storage directory, which is the
/// user's data directory: this points that default at a temporary directory first (on Linux
/// `$XDG_DATA_HOME`, on Apple platforms the home CoreFoundation reports), so tests never write
/// under the real home.
private let temporaryDataHome: URL = {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("convert-seed-home-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    setenv("XDG_DATA_HOME", directory.path, 1)
    setenv("CFFIXED_USER_HOME", directory.path, 1)
    return directory
}()

private func loadBakedConfig() -> Data {
    (try? Fixtures.data(.cdnConfigBaseline)) ?? Data()
}

@Suite struct SeedSnippetTests {
    @Test func theInitializer() async throws {
        _ = temporaryDataHome
        let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "YOUR_SDK_KEY"))
        #expect(sdk.configuration.sdkKey == "YOUR_SDK_KEY")
        let configured = ConvertSwiftSDK(configuration: ConvertConfiguration(
            sdkKey: "YOUR_SDK_KEY",
            logLevel: .info
        ))
        #expect(configured.configuration.logLevel == .info)
    }

    @Test func awaitingReadinessAndDirectData() async throws {
        let configData: Data = loadBakedConfig() // your own loader
        let sdk = ConvertSwiftSDK(configData: configData)
        try await sdk.ready() // validates the payload; throws if empty or invalid

        var reachedReady = false
        do {
            try await sdk.ready()
            // Config is available — safe to call runExperience / runFeature.
            reachedReady = true
        } catch {
            // Only throws on an unrecoverable configuration error
        }
        #expect(reachedReady)
    }

    @Test func completionHandlerOverload() async throws {
        let sdk = ConvertSwiftSDK(configData: loadBakedConfig())
        let visitor: String = await withCheckedContinuation { continuation in
            sdk.ready { result in
                // Called on MainActor
                switch result {
                case .success:
                    let ctx = sdk.createContext()
                    continuation.resume(returning: ctx.visitorId)
                case .failure(let error):
                    print("SDK configuration error: \(error)")
                    continuation.resume(returning: "")
                }
            }
        }
        #expect(!visitor.isEmpty)
    }

    @Test func invalidDirectDataAndEmptyKeyThrowInvalidConfiguration() async throws {
        let empty = ConvertSwiftSDK(configData: Data())
        await #expect(throws: ConvertError.invalidConfiguration("config is empty")) { try await empty.ready() }
        let noKey = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: ""))
        do {
            try await noKey.ready()
            Issue.record("an empty SDK key must not become ready")
        } catch ConvertError.invalidConfiguration(let why) {
            #expect(why == "the SDK key is empty")
        }
    }

    @Test func subscribingToEvents() async throws {
        // Scaffolding: direct data tracks to Convert's metrics host; this test's events go to a
        // refusing loopback port instead, and stay in memory.
        let sdk = ConvertSwiftSDK(configData: loadBakedConfig(), configuration: ConvertConfiguration(
            sdkKey: "", apiTrackEndpoint: "http://127.0.0.1:9", persistence: .memory, allowsInsecureHTTP: true))
        try await sdk.ready()
        let seen = Seen()
        let token = await sdk.on(.bucketing) { payload in
            if case let .bucketing(info) = payload {
                print("Bucketed visitor \(info.visitorId) into variation \(info.variationId)")
                seen.add(info.visitorId)
            }
        }
        let conversions = await sdk.on(.conversion) { payload in
            if case let .conversion(info) = payload {
                print("Goal \(info.goalId) converted by visitor \(info.visitorId)")
                seen.add(info.goalId)
            }
        }
        let ctx = sdk.createContext(visitorId: "visitor-42", attributes: ["desktop": "true", "browser": "FF"])
        ctx.setLocationProperties(["location": "pricing"])
        _ = await ctx.runExperience("test-experience-ab-fullstack-1")
        await ctx.trackConversion("button-primary-click")
        for _ in 0..<500 where seen.values.count < 2 { try await Task.sleep(for: .milliseconds(2)) }
        #expect(Set(seen.values) == ["visitor-42", "100322784"])
        // Later, cancel the subscription:
        await sdk.off(token)
        await sdk.off(conversions)
        _ = await sdk.createContext(visitorId: "visitor-43", attributes: ["mobile": true]).runExperience("test-experience-ab-fullstack-4")
        try await Task.sleep(for: .milliseconds(50))
        #expect(seen.values.count == 2)
    }

    @Test func creatingAVisitorContext() async throws {
        let sdk = ConvertSwiftSDK(configData: loadBakedConfig())
        // 1) Auto-visitor
        let auto = sdk.createContext()
        // 2) Explicit visitor — you own the ID (e.g. your login ID).
        let explicit = sdk.createContext(visitorId: "visitor-42")
        // 3) Explicit visitor + initial attributes.
        let withAttributes = sdk.createContext(
            visitorId: "visitor-42",
            attributes: ["plan": "premium", "accountAgeDays": 120]
        )
        #expect(auto.visitorId == sdk.createContext().visitorId)
        #expect(explicit.visitorId == "visitor-42")
        #expect(withAttributes.visitorAttributes["accountAgeDays"] == 120)
    }

    @Test func runtimeTrackingToggle() async throws {
        let sdk = ConvertSwiftSDK(configData: loadBakedConfig())
        await sdk.setTrackingEnabled(false)
        let enabled = await sdk.isTrackingEnabled()
        #expect(!enabled)
    }
}

private final class Seen: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [String] = []
    func add(_ item: String) { lock.withLock { items.append(item) } }
    var values: [String] { lock.withLock { items } }
}

// The event-bus page's example usage (its closure's parameter list parenthesised, as Swift needs
// for a typed parameter); the view model is `Sendable` because
// the bus hands it to its handler on the publishing thread.
private struct UserDidLoginEvent: EventBusEvent {
    let userID: String
}

private final class AuthService {
    private let eventBus: EventBus
    init(eventBus: EventBus = .default) {
        self.eventBus = eventBus
    }
    func completeLogin(userID: String) {
        eventBus.publish(UserDidLoginEvent(userID: userID))
    }
}

private final class ProfileViewModel: Sendable {
    private let eventBus: EventBus
    let reloaded = Seen()
    init(eventBus: EventBus = .default) {
        self.eventBus = eventBus
        eventBus.subscribe(owner: self) { (owner, event: UserDidLoginEvent) in
            owner.reloadProfile(for: event.userID)
        }
    }
    private func reloadProfile(for userID: String) {
        reloaded.add(userID)
    }
}

@Suite struct SeedEventBusExampleTests {
    @Test func aLoginReachesTheViewModelThroughTheDefaultBus() {
        let viewModel = ProfileViewModel()
        AuthService().completeLogin(userID: "42")
        #expect(viewModel.reloaded.values == ["42"])
    }
}
