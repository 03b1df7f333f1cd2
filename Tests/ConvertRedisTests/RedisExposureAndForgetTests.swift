import ConvertCore
import ConvertJSON
import ConvertMemory
import ConvertRedis
import ConvertSharedStore
import ConvertStorage
import ConvertTesting
import ConvertTracking
import Foundation
import Testing

/// Manual exposures and forgetting over a real Redis: one exposure for two instances, and a
/// forgotten visitor's hash deleted.
@Suite(.enabled(if: RedisServer.isAvailable, "redis-server is not installed (looked in PATH, /usr/bin, /usr/sbin)"))
struct RedisExposureAndForgetTests {
    private struct Instance {
        let sdk: ConvertSwiftSDK
        let sink = RecordingTrackingSink()

        init(_ client: RedisClient, config: Data) async throws {
            let store = WriteBehindVisitorStore(backend: RedisVisitorBackend(client: client), local: MemoryVisitorDataStore())
            sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "k", persistence: .memory), ports: ConvertPorts(
                configSource: StubConfigSource(initial: config), visitorStore: store, visitorIdStore: MemoryVisitorIdStore(),
                trackingSink: sink))
            try await sdk.ready(timeout: .patience)
        }

        func context(_ visitorId: String) async -> ConvertContext {
            let context = await sdk.loadContext(visitorId: visitorId, attributes: ["desktop": "true", "browser": "FF"])
            context.setLocationProperties(["location": "pricing"])
            return context
        }
    }

    @Test func twoInstancesSendOneManualExposureAndForgettingDeletesTheHash() async throws {
        let server = try RedisServer()
        let client = RedisClient(configuration: server.configuration(keyPrefix: "exposure:"))
        let config = try Fixtures.data(.cdnConfigBaseline)
        let a = try await Instance(client, config: config), b = try await Instance(client, config: config)
        let experience = "test-experience-ab-fullstack-1"

        let onA = await a.context("redis-visitor")
        #expect(onA.variation(forExperience: experience, exposure: .manual) != nil)
        #expect(await onA.saveVisitorData())
        let onB = await b.context("redis-visitor")
        #expect(onB.variation(forExperience: experience, exposure: .manual) != nil)
        var results: [ExposureResult] = []
        for context in [onA, onB, onB, onA] { results.append(await context.trackExposure(forExperience: experience)) }
        #expect(results == [.tracked, .alreadyTracked, .alreadyTracked, .alreadyTracked])
        #expect((a.sink.events + b.sink.events).filter { $0.eventType == "bucketing" }.count == 1)

        #expect(await a.sdk.forget(visitorId: "redis-visitor"))
        let hashes = try server.command(["KEYS", "exposure:visitor:*"]).arrayValue
        #expect(hashes?.isEmpty == true, "the visitor's hash is deleted")
        #expect(await b.context("redis-visitor").visitorDataLoad == .notFound)
    }
}
