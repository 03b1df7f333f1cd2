import ConvertEvents
import ConvertModel
import ConvertStorage
import ConvertSupport

/// The outside world the SDK talks to. Every field is a port: swap any of them (a test stub, a
/// file store, your own transport-backed sink) without touching the SDK.
///
/// ```swift
/// let sdk = ConvertSwiftSDK(configuration: config, ports: ConvertPorts(
///     configSource: DirectConfigSource(bytes: data), visitorStore: MemoryVisitorDataStore(),
///     visitorIdStore: MemoryVisitorIdStore(), trackingSink: RecordingTrackingSink()))
/// ```
public struct ConvertPorts: Sendable {
    public var configSource: any ConfigSource
    public var visitorStore: any VisitorDataStore
    public var visitorIdStore: any VisitorIdStore
    public var trackingSink: any TrackingSink
    public var logSink: any LogSink
    public var clock: TimeSource
    public var identifiers: IdentifierSource
    /// The hub system events are fired on; share one to observe several SDKs together.
    public var events: SystemEventHub

    public init(configSource: any ConfigSource, visitorStore: any VisitorDataStore, visitorIdStore: any VisitorIdStore,
                trackingSink: any TrackingSink, logSink: any LogSink = SilentLogSink(), clock: TimeSource = .system,
                identifiers: IdentifierSource = .uuid, events: SystemEventHub = SystemEventHub()) {
        self.configSource = configSource
        self.visitorStore = visitorStore
        self.visitorIdStore = visitorIdStore
        self.trackingSink = trackingSink
        self.logSink = logSink
        self.clock = clock
        self.identifiers = identifiers
        self.events = events
    }
}
