import ConvertCore
import ConvertEvents
import ConvertMemory
import ConvertModel
import ConvertStorage
import ConvertSupport
import Foundation

/// An SDK wired entirely in memory, with handles on every port for assertions.
///
/// ```swift
/// let harness = try TestSDK(fixture: .cdnConfigBaseline)
/// try await harness.sdk.ready(timeout: .seconds(5))
/// let context = harness.sdk.createContext(visitorId: "v1")
/// ```
public struct TestSDK: Sendable {
    public let sdk: ConvertSwiftSDK
    public let source: StubConfigSource
    public let sink: RecordingTrackingSink
    public let store: MemoryVisitorDataStore
    public let idStore: MemoryVisitorIdStore
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
