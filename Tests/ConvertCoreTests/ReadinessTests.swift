import ConvertCore
import ConvertModel
import ConvertTesting
import Foundation
import Testing

@Suite struct ReadinessTests {
    @Test func readyLatches() async throws {
        let harness = try await started()
        let start = ContinuousClock.now
        for _ in 0..<100 { try await harness.sdk.ready() }
        #expect(ContinuousClock.now - start < .seconds(1))
        #expect(harness.sdk.environment == "staging")
    }

    @Test func aSettledGateAnswersEvenAZeroTimeout() async throws {
        let harness = try await started()
        for _ in 0..<200 { try await harness.sdk.ready(timeout: .zero) }
        let broken = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: ""), ports: ConvertPorts(
            configSource: DirectConfigSource(bytes: Data("[]".utf8)), visitorStore: MemoryVisitorDataStoreFactory.make(),
            visitorIdStore: MemoryVisitorIdStoreFactory.make(), trackingSink: RecordingTrackingSink()))
        let failure = ConvertError.invalidConfiguration("config must be a JSON object, found an array")
        await #expect(throws: failure) { try await broken.ready() }
        for _ in 0..<200 {
            await #expect(throws: failure, "the failure, not a timeout") { try await broken.ready(timeout: .zero) }
        }
    }

    @Test func readyTimesOutWhenNoConfigArrives() async throws {
        let harness = TestSDK(data: nil)
        await #expect(throws: ConvertError.readyTimedOut(milliseconds: 50)) {
            try await harness.sdk.ready(timeout: .milliseconds(50))
        }
    }

    @Test func waitersAreReleasedWhenTheConfigArrives() async throws {
        let harness = TestSDK(data: nil)
        async let waiting: Void = harness.sdk.ready()
        try await Task.sleep(for: .milliseconds(20))
        await harness.source.push(try Fixtures.data(.staticConfig))
        try await waiting
        #expect(harness.sdk.config?.experiences.count == 2)
    }

    @Test func cancelledWaitThrowsCancelled() async throws {
        let harness = TestSDK(data: nil)
        let task = Task { try await harness.sdk.ready() }
        try await Task.sleep(for: .milliseconds(20))
        task.cancel()
        await #expect(throws: ConvertError.cancelled) { try await task.value }
    }

    @Test func completionTwinOnAQueue() async throws {
        let harness = try await started()
        let result: Result<Void, ConvertError> = await withCheckedContinuation { continuation in
            harness.sdk.ready(on: DispatchQueue.global()) { continuation.resume(returning: $0) }
        }
        #expect((try? result.get()) != nil)
    }

    @Test func completionTwinOnTheMainActor() async throws {
        _ = isOnMainQueue()
        let harness = try await started()
        let ok: Bool = await withCheckedContinuation { continuation in
            harness.sdk.ready { result in continuation.resume(returning: (try? result.get()) != nil && isOnMainQueue()) }
        }
        #expect(ok)
    }

    @Test(arguments: [
        ("", "config is empty"),
        ("   ", "config is empty"),
        ("{\"account_id\": ", "config is not valid JSON: unexpected end of input at line 1, column 16 (byte 15)"),
        ("[1, 2]", "config must be a JSON object, found an array"),
        ("{\"project\": {\"id\": \"1\"}}", "config is missing account_id"),
    ])
    func directDataErrorsAreClear(text: String, message: String) async throws {
        let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: ""), ports: ConvertPorts(
            configSource: DirectConfigSource(bytes: Data(text.utf8)), visitorStore: MemoryVisitorDataStoreFactory.make(),
            visitorIdStore: MemoryVisitorIdStoreFactory.make(), trackingSink: RecordingTrackingSink()))
        await #expect(throws: ConvertError.invalidConfiguration(message)) { try await sdk.ready() }
        await #expect(throws: ConvertError.invalidConfiguration(message)) { try await sdk.ready() }
        let context = sdk.createContext(visitorId: "v")
        #expect(await context.runExperience("anything") == nil)
        #expect(await context.runFeature("anything").status == .disabled)
    }

    @Test func sourceFailureFailsReadiness() async throws {
        let harness = TestSDK(data: nil)
        _ = harness
        let failing = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "k"), ports: ConvertPorts(
            configSource: StubConfigSource(failingWith: ConvertError.invalidConfiguration("the SDK key is empty")),
            visitorStore: MemoryVisitorDataStoreFactory.make(), visitorIdStore: MemoryVisitorIdStoreFactory.make(),
            trackingSink: RecordingTrackingSink()))
        await #expect(throws: ConvertError.invalidConfiguration("the SDK key is empty")) { try await failing.ready() }
    }
}
