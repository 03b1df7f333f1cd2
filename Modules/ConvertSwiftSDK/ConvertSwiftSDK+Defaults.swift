// The SDK's own vocabulary. Transport types (`HTTPRequest`, `HTTPResponse`) are not re-exported:
// their generic names clash with server frameworks imported beside the SDK; a custom transport
// imports ConvertTransport itself.
@_exported import ConvertCore
@_exported import ConvertCookie
@_exported import ConvertEvents
@_exported import ConvertTracking
@_exported import ConvertModel
@_exported import ConvertQueue
@_exported import ConvertRules
@_exported import ConvertStorage
@_exported import ConvertEnvironment
@_exported import ConvertVisitor
import ConvertTransport
import ConvertConfigLoader
import ConvertFileStorage
import ConvertMemory
import ConvertURLSessionTransport
import Foundation

extension ConvertSwiftSDK {
    /// Starts the SDK for an SDK key: the config comes from Convert's CDN (cached between runs,
    /// refreshed every `dataRefreshIntervalMs`) and tracking goes to the metrics host.
    ///
    /// ```swift
    /// let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "10035569/10034190"))
    /// try await sdk.ready(timeout: .seconds(5))
    /// ```
    public convenience init(configuration: ConvertConfiguration, logSink: any LogSink = StandardErrorLogSink()) {
        self.init(configuration: configuration, ports: .live(configuration, logSink: logSink, directData: nil))
    }

    /// Starts the SDK from direct config data (a bundled file, a test fixture), skipping the
    /// config fetch. ``ready()`` throws ``ConvertError/invalidConfiguration(_:)`` when the data is
    /// empty or not a valid config. Tracking is delivered when the configuration has an SDK key.
    ///
    /// ```swift
    /// let sdk = ConvertSwiftSDK(configData: try Data(contentsOf: bundledConfigURL))
    /// try await sdk.ready(timeout: .seconds(5))
    /// ```
    public convenience init(configData: Data,
                            configuration: ConvertConfiguration = ConvertConfiguration(sdkKey: "", persistence: .memory),
                            logSink: any LogSink = StandardErrorLogSink()) {
        self.init(configuration: configuration, ports: .live(configuration, logSink: logSink, directData: configData))
    }
}

extension ConvertPorts {
    /// The default wiring: URLSession transport, the CDN config source (or direct data), the
    /// tracking queue, and file or memory storage as the configuration says.
    ///
    /// - Parameters:
    ///   - configuration: the key, endpoints, intervals, persistence and log level to wire for.
    ///   - logSink: where log lines go; standard error unless you pass your own.
    ///   - transport: carries config fetches and tracking; URLSession unless you pass your own
    ///     (then with ``ConvertConfiguration/trackingAnswerTimeoutMs`` as its POST deadline).
    ///   - directData: config bytes to start from instead of fetching.
    ///   - visitorStore: the visitor data store to use instead of the configured one (a
    ///     `WriteBehindVisitorStore`, say); the file visitor store is then never opened.
    public static func live(_ configuration: ConvertConfiguration, logSink: any LogSink = StandardErrorLogSink(),
                            directData: Data? = nil, transport: (any HTTPTransport)? = nil,
                            visitorStore: (any VisitorDataStore)? = nil) -> ConvertPorts {
        live(configuration, logSink: logSink, directData: directData, transport: transport, visitorStore: visitorStore, app: nil)
    }

    /// ``live(_:logSink:directData:transport:visitorStore:)``, with an app's own visitor id store
    /// and background session when `app` has them (`ConvertSwiftSDK+Apps.swift`).
    static func live(_ configuration: ConvertConfiguration, logSink: any LogSink = StandardErrorLogSink(),
                     directData: Data? = nil, transport: (any HTTPTransport)? = nil,
                     visitorStore: (any VisitorDataStore)? = nil, app: AppWiring?) -> ConvertPorts {
        let transport = transport ?? URLSessionTransport(
            postAnswerDeadline: .milliseconds(max(1, configuration.trackingAnswerTimeoutMs)))
        let log = SDKLog(sink: logSink, minimum: configuration.logLevel)
        let hub = SystemEventHub()
        if let problem = ConvertConfiguration.problem(withSDKKey: configuration.sdkKey) {
            log.warn(problem)
        }
        // Without a key or data no config can ever come, so there is nothing to keep on disk.
        let storage = DefaultStorage(configuration, visitorStore: visitorStore,
                                     persists: directData != nil || !configuration.sdkKey.isEmpty, log: log)
        let policy = EndpointPolicy(allowsInsecureHTTP: configuration.allowsInsecureHTTP)
        let timeout = Duration.milliseconds(configuration.requestTimeoutMs)

        let source: any ConfigSource
        if let directData {
            source = DirectConfigSource(bytes: directData)
        } else {
            source = RemoteConfigSource(
                settings: .init(sdkKey: configuration.sdkKey, sdkKeySecret: configuration.sdkKeySecret,
                                environment: configuration.environment, endpoint: configuration.apiConfigEndpoint,
                                lowCache: configuration.networkCacheLevel == .low, debugToken: configuration.debugToken,
                                refreshInterval: .milliseconds(max(1000, configuration.dataRefreshIntervalMs)),
                                requestTimeout: timeout, policy: policy),
                transport: transport, cache: storage.blobs, log: log)
        }

        let sink: any TrackingSink
        let endpoint = TrackingEndpoint(template: configuration.apiTrackEndpoint, sdkKey: configuration.sdkKey, policy: policy)
        if !endpoint.hasSDKKey && directData == nil {
            // Such an SDK never becomes ready (ready() throws), so nothing would be tracked anyway.
            sink = DiscardingTrackingSink()
        } else if let delivery = app?.backgroundDelivery(endpoint: endpoint, configuration: configuration, ledger: storage.blobs, log: log) {
            sink = TrackingQueue(delivery: delivery, options: TrackingQueueOptions(
                batchSize: configuration.eventsBatchSize, releaseInterval: .milliseconds(configuration.eventsReleaseIntervalMs),
                capacity: configuration.eventQueueCapacity, requestTimeout: timeout),
                journal: storage.journal, log: log, released: hub.queueReleased)
        } else {
            sink = TrackingQueue(
                transport: transport,
                endpoint: endpoint,
                options: TrackingQueueOptions(batchSize: configuration.eventsBatchSize,
                                              releaseInterval: .milliseconds(configuration.eventsReleaseIntervalMs),
                                              capacity: configuration.eventQueueCapacity, requestTimeout: timeout),
                journal: storage.journal, events: hub, log: log)
        }
        return ConvertPorts(configSource: source, visitorStore: storage.visitors,
                            visitorIdStore: app?.visitorIdStore ?? ByteStoreVisitorIdStore(store: storage.blobs), trackingSink: sink,
                            logSink: logSink, events: hub)
    }
}

/// File storage when configured and possible, memory otherwise.
struct DefaultStorage {
    let blobs: any ByteStore
    let visitors: any VisitorDataStore
    let journal: (any EventJournal)?

    init(_ configuration: ConvertConfiguration, visitorStore: (any VisitorDataStore)? = nil, persists: Bool = true, log: SDKLog) {
        if configuration.persistence == .file && persists {
            let directory = configuration.storageDirectory ?? FileStorage.defaultDirectory(for: configuration.sdkKey)
            do {
                let files = try FileByteStore(directory: directory)
                let visitors = try visitorStore
                    ?? FileVisitorDataStore(directory: directory, capacity: configuration.visitorStoreCapacity, log: log)
                let journal = try FileEventJournal(directory: directory, log: log)
                self.blobs = files
                self.visitors = visitors
                self.journal = journal
                return
            } catch {
                log.error("file storage unavailable at \(directory.path) (\(error)); using memory")
            }
        }
        blobs = MemoryByteStore()
        visitors = visitorStore ?? MemoryVisitorDataStore(capacity: configuration.visitorStoreCapacity)
        journal = nil
    }
}

/// Writes log lines to standard error as `[Convert] LEVEL message key=value …`.
public struct StandardErrorLogSink: LogSink {
    /// A sink writing to the process's standard error.
    public init() {}

    public func log(_ level: LogLevel, _ message: String) {
        log(LogRecord(level: level, message: message))
    }

    /// Writes the message and its metadata, sorted by key.
    public func log(_ record: LogRecord) {
        let metadata = record.metadata.sorted { $0.key < $1.key }
            .map { " \($0.key)=\(SDKLog.escapingControlCharacters($0.value))" }.joined()
        FileHandle.standardError.write(Data("[Convert] \(record.level.name) \(record.message)\(metadata)\n".utf8))
    }
}

extension TrackingQueue {
    /// A queue that announces each acknowledged batch on `events` as `api.queue.released`.
    public init(transport: any HTTPTransport, endpoint: TrackingEndpoint, options: TrackingQueueOptions = TrackingQueueOptions(),
                journal: (any EventJournal)? = nil, events: SystemEventHub?, log: SDKLog = .silent,
                clock: any SleepClock = .continuous) {
        self.init(transport: transport, endpoint: endpoint, options: options, journal: journal, log: log, clock: clock,
                  released: events?.queueReleased)
    }
}
