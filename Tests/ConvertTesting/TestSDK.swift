import ConvertCore
import ConvertEnvironment
import ConvertEvents
import ConvertMemory
import ConvertModel
import ConvertStorage
import Foundation

/// An SDK wired entirely in memory, with handles on every port for assertions.
///
/// ```swift
/// let harness = try TestSDK(fixture: .cdnConfigBaseline)
/// try await harness.sdk.ready(timeout: .patience)
/// let context = harness.sdk.createContext(visitorId: "v1")
/// ```
public struct TestSDK: Sendable {
    /// The SDK under test, wired to the doubles below.
    public let sdk: ConvertSwiftSDK
    /// The config source; push a document to simulate a fetch.
    public let source: StubConfigSource
    /// Every tracking event the SDK queued, in order.
    public let sink: RecordingTrackingSink
    /// The visitor data store: sticky decisions, goals, segments.
    public let store: MemoryVisitorDataStore
    /// The auto visitor id store.
    public let idStore: MemoryVisitorIdStore
    /// Every log line (at `.debug` and above unless the configuration asks otherwise).
    public let logs: RecordingLogSink

    /// Builds an SDK that starts from `data` (or from nothing until the test pushes a config).
    public init(data: Data?, configuration: ConvertConfiguration = ConvertConfiguration(sdkKey: "test-key"),
                store: MemoryVisitorDataStore = MemoryVisitorDataStore(), idStore: MemoryVisitorIdStore = MemoryVisitorIdStore(),
                identifiers: IdentifierSource = .uuid) {
        var configuration = configuration
        if configuration.logLevel == .warn { configuration.logLevel = .debug }
        let source = StubConfigSource(initial: data)
        let sink = RecordingTrackingSink()
        let logs = RecordingLogSink()
        self.source = source
        self.sink = sink
        self.store = store
        self.idStore = idStore
        self.logs = logs
        sdk = ConvertSwiftSDK(configuration: configuration, ports: ConvertPorts(
            configSource: source, visitorStore: store, visitorIdStore: idStore, trackingSink: sink,
            logSink: logs, identifiers: identifiers))
    }

    /// Builds an SDK that starts from a fixture config.
    public init(fixture: Fixtures.File, configuration: ConvertConfiguration = ConvertConfiguration(sdkKey: "test-key"),
                store: MemoryVisitorDataStore = MemoryVisitorDataStore()) throws {
        self.init(data: try Fixtures.data(fixture), configuration: configuration, store: store)
    }
}
