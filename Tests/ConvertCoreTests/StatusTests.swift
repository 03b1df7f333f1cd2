import ConvertCore
import ConvertEnvironment
import ConvertMemory
import ConvertModel
import ConvertSynchronization
import ConvertTesting
import Foundation
import Testing

/// A config source the test drives: it delivers what is pushed and reports what it is told.
private final class DrivenSource: ConfigSource, Sendable {
    private let actions: AsyncStream<Action>
    private let continuation: AsyncStream<Action>.Continuation

    enum Action: Sendable {
        case deliver(Data)
        case report(ConfigSourceReport)
    }

    init() {
        (actions, continuation) = AsyncStream<Action>.makeStream()
    }

    func send(_ action: Action) { continuation.yield(action) }

    func run(deliver: @escaping @Sendable (ConfigDocument) async -> Void) async throws {
        try await run(deliver: deliver, report: { _ in })
    }

    func run(deliver: @escaping @Sendable (ConfigDocument) async -> Void,
             report: @escaping @Sendable (ConfigSourceReport) -> Void) async throws {
        for await action in actions {
            switch action {
            case .deliver(let bytes): await deliver(ConfigDocument(bytes: bytes, origin: .network))
            case .report(let what): report(what)
            }
        }
    }
}

@Suite struct StatusTests {
    private func makeSDK(_ source: any ConfigSource, clock: ManualClock, refreshMs: Int = 60_000) -> ConvertSwiftSDK {
        ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "test-key", dataRefreshIntervalMs: refreshMs),
                        ports: ConvertPorts(configSource: source, visitorStore: MemoryVisitorDataStore(),
                                            visitorIdStore: MemoryVisitorIdStore(), trackingSink: RecordingTrackingSink(),
                                            sleepClock: clock))
    }

    private func next(_ iterator: inout AsyncStream<SDKStatus>.Iterator,
                      until accept: (SDKStatus) -> Bool) async -> SDKStatus? {
        while let status = await iterator.next() {
            if accept(status) { return status }
        }
        return nil
    }

    @Test func startingThenReadyThenStaleThenReadyAgainOnAConfirmation() async throws {
        let clock = ManualClock(), source = DrivenSource()
        let sdk = makeSDK(source, clock: clock)
        var updates = sdk.statusUpdates().makeAsyncIterator()
        #expect(await updates.next() == .starting)
        #expect(sdk.status == .starting)

        source.send(.deliver(try Fixtures.data(.cdnConfigBaseline)))
        try await sdk.ready(timeout: .patience)
        let ready = await next(&updates) { $0.isDeciding }
        #expect(ready == .ready(configAge: .zero))

        clock.advance(by: .seconds(100))
        #expect(sdk.status == .ready(configAge: .seconds(100)), "within twice the refresh interval")
        clock.advance(by: .seconds(30))
        source.send(.report(.failed("CDN answered 503")))
        let stale = await next(&updates) { if case .stale = $0 { true } else { false } }
        #expect(stale == .stale(configAge: .seconds(130), cause: "CDN answered 503"))
        #expect(sdk.configFetchFailures == 1)

        source.send(.report(.confirmed))
        let fresh = await next(&updates) { $0 == .ready(configAge: .zero) }
        #expect(fresh != nil, "a 304 resets the config's age")
        #expect(sdk.status.configAge == .zero)
    }

    @Test func aSourceThatCannotDeliverFailsWithItsCause() async throws {
        let sdk = makeSDK(StubConfigSource(failingWith: ConvertError.invalidConfiguration("no key")), clock: ManualClock())
        var updates = sdk.statusUpdates().makeAsyncIterator()
        let failed = await next(&updates) { if case .failed = $0 { true } else { false } }
        guard case .failed(let cause)? = failed else {
            Issue.record("no failure reported: \(String(describing: failed))")
            return
        }
        #expect(cause.contains("no key"))
        #expect(!sdk.status.isDeciding)
    }
}
