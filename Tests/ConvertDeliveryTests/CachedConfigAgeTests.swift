import ConvertConfigLoader
import ConvertMemory
import ConvertSwiftSDK
import ConvertTesting
import ConvertTransport
import Foundation
import Testing

// A config restored from the cache is as old as the CDN's last word on it, not as old as the
// process: the time of that word is kept beside the cached copy.

private struct Unreachable: Error {}

/// A source whose every fetch fails, over `cache`.
private func offlineSource(_ cache: MemoryByteStore) -> RemoteConfigSource {
    RemoteConfigSource(settings: RemoteConfigSource.Settings(sdkKey: "100/200", endpoint: "https://cdn.example.com/api/v1",
                                                            refreshInterval: .seconds(300)),
                       transport: StubTransport { _ in throw Unreachable() }, cache: cache, clock: ManualClock())
}

private func sdk(on source: RemoteConfigSource, clock: ManualClock) -> ConvertSwiftSDK {
    ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "100/200", dataRefreshIntervalMs: 300_000, persistence: .memory),
                    ports: ConvertPorts(configSource: source, visitorStore: MemoryVisitorDataStore(),
                                        visitorIdStore: MemoryVisitorIdStore(), trackingSink: RecordingTrackingSink(),
                                        sleepClock: clock))
}

private func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

@Suite(.serialized) struct CachedConfigAgeTests {
    @Test func aCachedConfigConfirmedAnHourAgoIsAnHourOld() async throws {
        let cache = MemoryByteStore()
        let source = offlineSource(cache)
        try cache.write(try Fixtures.data(.cdnConfigBaseline), to: source.cacheName)
        let written = Date()
        let confirmed = written.timeIntervalSince1970 - 3600
        try cache.write(Data(String(confirmed).utf8), to: "confirmed-" + source.cacheName)

        let clock = ManualClock()
        let sdk = sdk(on: source, clock: clock)
        try await sdk.ready()
        guard case .stale(let age, _) = sdk.status else {
            Issue.record("an hour-old config is stale past twice the 5-minute interval: \(sdk.status)")
            return
        }
        // Read on the wall clock at some moment of the start: an hour, plus at most the time the
        // start took (minutes on a loaded machine under a sanitizer).
        let started = Date().timeIntervalSince(written)
        #expect(seconds(age) >= 3600 - 1 && seconds(age) <= 3600 + started + 1, "configAge \(age), start took \(started) s")
        clock.advance(by: .seconds(10))
        let later = sdk.status.configAge.map(seconds) ?? 0
        #expect(later >= 3610 - 1 && later <= 3610 + started + 1, "the age goes on from there: \(later)")
    }

    @Test func aCachedConfigWithoutItsConfirmationTimeIsOld() async throws {
        // The layout of earlier versions: the document alone.
        let cache = MemoryByteStore()
        let source = offlineSource(cache)
        try cache.write(try Fixtures.data(.cdnConfigBaseline), to: source.cacheName)

        let sdk = sdk(on: source, clock: ManualClock())
        try await sdk.ready()
        guard case .stale(let age, let cause) = sdk.status else {
            Issue.record("a config of unknown age is not fresh: \(sdk.status)")
            return
        }
        #expect(age > .seconds(600))
        #expect(!cause.isEmpty)
    }

    @Test func aFetchAndANotModifiedAnswerRecordTheConfirmation() async throws {
        let config = try Fixtures.data(.cdnConfigBaseline)
        let cache = MemoryByteStore()
        let notModified = StubTransport { _ in HTTPResponse(status: 200, headers: ["ETag": "\"v1\""], body: config) }
        let source = RemoteConfigSource(settings: RemoteConfigSource.Settings(sdkKey: "100/200", endpoint: "https://cdn.example.com/api/v1"),
                                        transport: notModified, cache: cache, clock: ManualClock())
        let run = Task { try await source.run(deliver: { _ in }, report: { _ in }) }
        defer { run.cancel() }
        try await eventually("the fetch is cached", timeout: .seconds(20)) { (try? cache.read("confirmed-" + source.cacheName)) != nil }
        let stamp = { () -> Double in
            Double(String(decoding: (try? cache.read("confirmed-" + source.cacheName)) ?? Data(), as: UTF8.self)) ?? 0
        }
        #expect(abs(stamp() - Date().timeIntervalSince1970) < 60)

        // An hour-old stamp, then a 304: the confirmation is now.
        try cache.write(Data(String(Date().timeIntervalSince1970 - 3600).utf8), to: "confirmed-" + source.cacheName)
        notModified.setResponder { _ in HTTPResponse(status: 304) }
        #expect(await source.refresh() == .unchanged)
        #expect(abs(stamp() - Date().timeIntervalSince1970) < 60, "a 304 confirms the cached copy")
    }
}
