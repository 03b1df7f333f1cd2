import ConvertEnvironment
import ConvertHashing
import Foundation

/// How fresh the CDN may serve the config.
public enum NetworkCacheLevel: String, Sendable, Hashable, Codable {
    /// The CDN's normal caching.
    case normal = "default"
    /// Short-lived caching (`_conv_low_cache=1`), for development.
    case low
}

/// Where visitor data, the config cache and pending events are kept.
public enum Persistence: String, Sendable, Hashable, Codable {
    /// Files in ``ConvertConfiguration/storageDirectory`` (or the platform default): survives restarts.
    case file
    /// Memory only: lost when the process ends.
    case memory
}

/// Everything the SDK can be told at start. Every field but `sdkKey` has the Convert SDKs' default.
///
/// ```swift
/// let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "10035569/10034190", environment: "production"))
/// ```
public struct ConvertConfiguration: Sendable, Hashable {
    /// The default config endpoint.
    public static let defaultConfigEndpoint = "https://cdn-4.convertexperiments.com/api/v1"
    /// The default tracking endpoint; `[project_id]` is replaced by the project id.
    public static let defaultTrackEndpoint = "https://[project_id].metrics.convertexperiments.com/v1"
    /// The environment used when none is configured or named by the config document.
    public static let defaultEnvironment = "staging"

    /// The project's SDK key.
    public var sdkKey: String
    /// A secret sent as `Authorization: Bearer` with config requests; never logged.
    public var sdkKeySecret: String?
    /// The environment whose experiences run; `nil` uses the document's or `"staging"`.
    public var environment: String?
    /// The config host; the request is `{apiConfigEndpoint}/config/{sdkKey}`.
    public var apiConfigEndpoint: String
    /// The tracking host; `[project_id]` is replaced, the request is `…/track/{sdkKey}`.
    public var apiTrackEndpoint: String
    /// How often the config is refreshed, in milliseconds.
    public var dataRefreshIntervalMs: Int
    /// How many pending tracking events trigger a delivery.
    public var eventsBatchSize: Int
    /// How long after the first pending event a delivery happens anyway, in milliseconds.
    public var eventsReleaseIntervalMs: Int
    /// Whether tracking events are sent at all.
    public var networkTracking: Bool
    /// How fresh the CDN may serve the config.
    public var networkCacheLevel: NetworkCacheLevel
    /// A debug token sent with config requests; never logged.
    public var debugToken: String?
    /// The minimum level written to the log sink.
    public var logLevel: LogLevel
    /// How many visitors the in-memory visitor store keeps.
    public var visitorStoreCapacity: Int
    /// The MurmurHash3 seed of bucketing.
    public var hashSeed: UInt32
    /// Where state is kept between runs.
    public var persistence: Persistence
    /// The directory for file persistence; `nil` uses the platform default for the SDK key.
    public var storageDirectory: URL?
    /// How long one HTTP exchange may take, in milliseconds.
    public var requestTimeoutMs: Int
    /// How long a tracking request may go unanswered before its connection counts as dead and
    /// the batch is retried (the default URLSession transport's POST deadline), in milliseconds.
    public var trackingAnswerTimeoutMs: Int
    /// The most tracking events held pending; past it new events are dropped and counted.
    public var eventQueueCapacity: Int
    /// Allow plain `http` endpoints (loopback test servers); `https` is required otherwise.
    public var allowsInsecureHTTP: Bool
    /// Read QA overrides at creation from the `CONVERT_FORCE` environment variable and the
    /// `-ConvertForce` launch arguments (``DecisionOverrides/fromLaunch()``). Off by default, so a
    /// server that happens to run with that variable set forces nothing it did not ask for.
    public var readsLaunchOverrides: Bool
    /// The consent of a context's visitor unless the context is given one
    /// (``ConvertContext/setConsent(_:)``): ``VisitorConsent/granted`` by default; with
    /// ``VisitorConsent/denied``, visitors are decided but neither stored nor tracked until they
    /// consent.
    public var defaultConsent: VisitorConsent = .granted

    /// Every option by name; all but `sdkKey` default to the Convert SDKs' values.
    public init(sdkKey: String, sdkKeySecret: String? = nil, environment: String? = nil,
                apiConfigEndpoint: String = ConvertConfiguration.defaultConfigEndpoint,
                apiTrackEndpoint: String = ConvertConfiguration.defaultTrackEndpoint,
                dataRefreshIntervalMs: Int = 300_000, eventsBatchSize: Int = 10, eventsReleaseIntervalMs: Int = 1000,
                networkTracking: Bool = true, networkCacheLevel: NetworkCacheLevel = .normal, debugToken: String? = nil,
                logLevel: LogLevel = .warn, visitorStoreCapacity: Int = 10_000, hashSeed: UInt32 = MurmurHash3.defaultSeed,
                persistence: Persistence = .file, storageDirectory: URL? = nil, requestTimeoutMs: Int = 10_000,
                trackingAnswerTimeoutMs: Int = 2_000,
                eventQueueCapacity: Int = 100_000, allowsInsecureHTTP: Bool = false, readsLaunchOverrides: Bool = false) {
        self.sdkKey = sdkKey
        self.sdkKeySecret = sdkKeySecret
        self.environment = environment
        self.apiConfigEndpoint = apiConfigEndpoint
        self.apiTrackEndpoint = apiTrackEndpoint
        self.dataRefreshIntervalMs = dataRefreshIntervalMs
        self.eventsBatchSize = eventsBatchSize
        self.eventsReleaseIntervalMs = eventsReleaseIntervalMs
        self.networkTracking = networkTracking
        self.networkCacheLevel = networkCacheLevel
        self.debugToken = debugToken
        self.logLevel = logLevel
        self.visitorStoreCapacity = visitorStoreCapacity
        self.hashSeed = hashSeed
        self.persistence = persistence
        self.storageDirectory = storageDirectory
        self.requestTimeoutMs = requestTimeoutMs
        self.trackingAnswerTimeoutMs = trackingAnswerTimeoutMs
        self.eventQueueCapacity = eventQueueCapacity
        self.allowsInsecureHTTP = allowsInsecureHTTP
        self.readsLaunchOverrides = readsLaunchOverrides
    }
}

extension ConvertConfiguration: CustomStringConvertible, CustomDebugStringConvertible {
    /// A summary with the secret and debug token redacted.
    public var description: String {
        "ConvertConfiguration(sdkKey: \(sdkKey), sdkKeySecret: \(sdkKeySecret == nil ? "none" : "<redacted>"), "
            + "environment: \(environment ?? "default"), apiConfigEndpoint: \(apiConfigEndpoint), "
            + "apiTrackEndpoint: \(apiTrackEndpoint), dataRefreshIntervalMs: \(dataRefreshIntervalMs), "
            + "eventsBatchSize: \(eventsBatchSize), eventsReleaseIntervalMs: \(eventsReleaseIntervalMs), "
            + "networkTracking: \(networkTracking), networkCacheLevel: \(networkCacheLevel.rawValue), "
            + "debugToken: \(debugToken == nil ? "none" : "<redacted>"), logLevel: \(logLevel.name), "
            + "persistence: \(persistence.rawValue))"
    }

    public var debugDescription: String { description }
}

extension ConvertConfiguration: CustomReflectable {
    /// Every setting, with the secret and the debug token redacted (`dump` reads this).
    public var customMirror: Mirror {
        func redacted(_ value: String?) -> String { value == nil ? "none" : "<redacted>" }
        return Mirror(self, children: [
            "sdkKey": sdkKey, "sdkKeySecret": redacted(sdkKeySecret), "environment": environment as Any,
            "apiConfigEndpoint": apiConfigEndpoint, "apiTrackEndpoint": apiTrackEndpoint,
            "dataRefreshIntervalMs": dataRefreshIntervalMs, "eventsBatchSize": eventsBatchSize,
            "eventsReleaseIntervalMs": eventsReleaseIntervalMs, "networkTracking": networkTracking,
            "networkCacheLevel": networkCacheLevel, "debugToken": redacted(debugToken), "logLevel": logLevel.name,
            "visitorStoreCapacity": visitorStoreCapacity, "hashSeed": hashSeed, "persistence": persistence, "storageDirectory": storageDirectory as Any, "requestTimeoutMs": requestTimeoutMs,
            "trackingAnswerTimeoutMs": trackingAnswerTimeoutMs,
            "eventQueueCapacity": eventQueueCapacity, "allowsInsecureHTTP": allowsInsecureHTTP,
            "readsLaunchOverrides": readsLaunchOverrides,
        ], displayStyle: .struct)
    }
}

extension ConvertConfiguration {
    /// ``requestTimeoutMs`` as a `Duration` (whole milliseconds are kept).
    public var requestTimeout: Duration {
        get { .milliseconds(requestTimeoutMs) }
        set { requestTimeoutMs = Self.milliseconds(newValue) }
    }

    /// ``dataRefreshIntervalMs`` as a `Duration` (whole milliseconds are kept).
    public var dataRefreshInterval: Duration {
        get { .milliseconds(dataRefreshIntervalMs) }
        set { dataRefreshIntervalMs = Self.milliseconds(newValue) }
    }

    /// ``eventsReleaseIntervalMs`` as a `Duration` (whole milliseconds are kept).
    public var eventsReleaseInterval: Duration {
        get { .milliseconds(eventsReleaseIntervalMs) }
        set { eventsReleaseIntervalMs = Self.milliseconds(newValue) }
    }

    /// Whole milliseconds of `duration`, clamped to `Int`'s range.
    static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return seconds < 0 ? Int.min : Int.max }
        let (total, overflowAdding) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000_000_000)
        return overflowAdding ? (seconds < 0 ? Int.min : Int.max) : Int(total)
    }

    /// Why `sdkKey` cannot be a Convert project's key, or `nil` when it has the key's form
    /// (`accountId/projectId`, two numbers) or is empty (direct config data, no tracking).
    ///
    /// ```swift
    /// ConvertConfiguration.problem(withSDKKey: "10035569/10034190")   // nil
    /// ConvertConfiguration.problem(withSDKKey: "YOUR_SDK_KEY")         // "sdkKey \"YOUR_SDK_KEY\" is not …"
    /// ```
    package static func problem(withSDKKey sdkKey: String) -> String? {
        if sdkKey.isEmpty { return nil }
        let parts = sdkKey.split(separator: "/", omittingEmptySubsequences: false)
        let isNumber = { (part: Substring) in !part.isEmpty && part.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
        if parts.count == 2, parts.allSatisfy(isNumber) { return nil }
        return "sdkKey \"\(sdkKey.prefix(64))\" is not of the form accountId/projectId (two numbers, e.g. 10035569/10034190, "
            + "as the project's settings in the Convert app show it): config requests and tracking will fail"
    }
}
