import ConvertEnvironment
import ConvertEvents
import ConvertTracking
import ConvertModel
import ConvertStorage

/// The outside world the SDK talks to. Every field is a port: swap any of them (a test stub, a
/// file store, your own transport-backed sink) without touching the SDK.
///
/// ```swift
/// let sdk = ConvertSwiftSDK(configuration: config, ports: ConvertPorts(
///     configSource: DirectConfigSource(bytes: data), visitorStore: MemoryVisitorDataStore(),
///     visitorIdStore: MemoryVisitorIdStore(), trackingSink: RecordingTrackingSink()))
/// ```
public struct ConvertPorts: Sendable {
    /// Where config documents come from.
    public var configSource: any ConfigSource
    /// Per-visitor memory: sticky decisions, goal dedup, segments, locations.
    public var visitorStore: any VisitorDataStore
    /// Where the auto-generated visitor id is kept.
    public var visitorIdStore: any VisitorIdStore
    /// Where tracking events go (the delivery queue in the default wiring).
    public var trackingSink: any TrackingSink
    /// Where log lines go.
    public var logSink: any LogSink
    /// Monotonic time for the SDK's own timeouts (``ConvertSwiftSDK/ready(timeout:)``).
    public var sleepClock: any SleepClock
    /// New auto visitor ids.
    public var identifiers: IdentifierSource
    /// The hub system events are fired on; share one to observe several SDKs together.
    public var events: SystemEventHub

    /// Collects the ports; only the stores, the config source and the sink are required.
    public init(configSource: any ConfigSource, visitorStore: any VisitorDataStore, visitorIdStore: any VisitorIdStore,
                trackingSink: any TrackingSink, logSink: any LogSink = SilentLogSink(),
                identifiers: IdentifierSource = .uuid, events: SystemEventHub = SystemEventHub(),
                sleepClock: any SleepClock = .continuous) {
        self.configSource = configSource
        self.visitorStore = visitorStore
        self.visitorIdStore = visitorIdStore
        self.trackingSink = trackingSink
        self.logSink = logSink
        self.sleepClock = sleepClock
        self.identifiers = identifiers
        self.events = events
    }
}
