import ConvertEnvironment
import ConvertModel
import ConvertStorage
import ConvertSynchronization
import ConvertTransport
import Foundation

/// The config from Convert's CDN: cache first, then the live document, then a refresh about
/// every `refreshInterval`, forever; ``refresh()`` fetches at once.
///
/// - The request is `GET {endpoint}/config/{sdkKey}` with, in order, `environment`,
///   `_conv_low_cache=1` (low cache level or a debug token) and `debug_token` query items;
///   `Authorization: Bearer {secret}` when a secret is set; `If-None-Match` once an `ETag` came
///   and `If-Modified-Since` once a `Last-Modified` came, each echoing the server's value verbatim.
/// - Only 2xx bodies that decode as a config are delivered and cached, verbatim and atomically;
///   a 304 keeps the current config (reported as confirmed, never decoded); anything else is
///   logged and retried with backoff.
/// - Beside the cached copy, the time the CDN last sent or confirmed it (a 2xx or a 304) is
///   kept (`confirmed-<cache name>`, seconds since 1970 as text), so a copy restored at the
///   next start is as old as that; a copy without it (an earlier version's) is delivered with
///   no time, and taken as stale.
/// - Each wait between fetches is the interval times a random factor between 0.9 and 1.1, the
///   first one after start included, so instances started together drift apart instead of
///   fetching in lockstep.
/// - A cached copy that cannot be read is deleted and logged; the live fetch still runs.
public struct RemoteConfigSource: RefreshableConfigSource {
    /// What the source needs to know.
    public struct Settings: Sendable {
        /// The project's SDK key (`accountId/projectId`); the config URL ends with it.
        public var sdkKey: String
        /// Sent as `Authorization: Bearer …` when set; never logged.
        public var sdkKeySecret: String?
        /// The `environment` query item; `nil` sends none and Convert serves its default.
        public var environment: String?
        /// The config host's base URL, without `/config/…`.
        public var endpoint: String
        /// Adds `_conv_low_cache=1`, asking the CDN for a fresher copy.
        public var lowCache: Bool
        /// Adds `_conv_low_cache=1&debug_token=…` when set; never logged.
        public var debugToken: String?
        /// The wait between successful fetches (5 minutes by default), each wait drawn at random
        /// between 90% and 110% of it so that instances started together spread out.
        public var refreshInterval: Duration
        /// How long one fetch may take (10 s by default).
        public var requestTimeout: Duration
        /// The backoff after a failed fetch (1 s doubling to 60 s by default).
        public var retry: RetryPolicy
        /// Which endpoint URLs are accepted (`https` only by default).
        public var policy: EndpointPolicy

        /// Settings for `sdkKey` with the SDK's defaults for everything else.
        public init(sdkKey: String, sdkKeySecret: String? = nil, environment: String? = nil,
                    endpoint: String = "https://cdn-4.convertexperiments.com/api/v1", lowCache: Bool = false,
                    debugToken: String? = nil, refreshInterval: Duration = .seconds(300), requestTimeout: Duration = .seconds(10),
                    retry: RetryPolicy = RetryPolicy(), policy: EndpointPolicy = EndpointPolicy()) {
            self.sdkKey = sdkKey
            self.sdkKeySecret = sdkKeySecret
            self.environment = environment
            self.endpoint = endpoint
            self.lowCache = lowCache
            self.debugToken = debugToken
            self.refreshInterval = refreshInterval
            self.requestTimeout = requestTimeout
            self.retry = retry
            self.policy = policy
        }
    }

    /// What to fetch, how often and how patiently.
    public let settings: Settings
    /// Carries the fetches.
    public let transport: any HTTPTransport
    /// Where the last good document is kept between runs; `nil` keeps none.
    public let cache: (any ByteStore)?
    /// Where fetch failures and cache problems are reported.
    public let log: SDKLog
    /// What the refresh interval and the backoff are measured on.
    public let clock: any SleepClock
    /// A uniform random number in `0...1` for each wait's jitter.
    let random: @Sendable () -> Double
    /// The latest fetch's failure (``lastFailure``), and whether a config has been delivered,
    /// shared by the copies of this value.
    let status = Locked(Status())
    /// The validators, the fetch under way and the running loop's receivers, shared by the copies.
    let coordinator = RefreshCoordinator()

    struct Status {
        var lastFailure: String?
        var delivered = false
    }

    /// Why the latest fetch failed, with the URL asked (no query, no secret); `nil` after a success.
    public var lastFailure: String? { status.withValue { $0.lastFailure } }

    /// A source fetching through `transport` and caching in `cache`; refreshes and backoffs
    /// wait on `clock`, jittered by `random` (uniform in `0...1`; pass a fixed one for
    /// repeatable waits: `0.5` waits exactly the interval).
    public init(settings: Settings, transport: any HTTPTransport, cache: (any ByteStore)?, log: SDKLog = .silent,
                clock: any SleepClock = .continuous, random: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }) {
        self.settings = settings
        self.transport = transport
        self.cache = cache
        self.log = log
        self.clock = clock
        self.random = random
    }

    /// Why an SDK key cannot be right: too long, or holding spaces or control characters.
    package static func problem(withKey key: String) -> String? {
        if key.utf8.count > 256 { return "longer than 256 bytes" }
        if key.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F }) {
            return "contains white space or control characters"
        }
        return nil
    }

    /// The cache entry name for this SDK key and environment.
    package var cacheName: String {
        "config-\(settings.sdkKey)-\(settings.environment ?? "default").json"
    }

    /// The name of the record of when the CDN last sent or confirmed the cached copy; a prefix
    /// rather than a suffix, so that no cut of a long name makes it the cache entry's.
    package var confirmationName: String { "confirmed-" + cacheName }

    /// The config request, exactly as sent (before the User-Agent stamp).
    package func request(etag: String?, lastModified: String? = nil) throws -> HTTPRequest {
        var base = settings.endpoint
        while base.hasSuffix("/") { base.removeLast() }
        let key = settings.sdkKey.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? settings.sdkKey
        guard var components = URLComponents(url: try settings.policy.url("\(base)/config/\(key)"),
                                             resolvingAgainstBaseURL: false) else {
            throw TransportError.refused("config endpoint \(base) is not a URL")
        }
        var query: [URLQueryItem] = []
        if let environment = settings.environment { query.append(URLQueryItem(name: "environment", value: environment)) }
        if settings.lowCache || settings.debugToken != nil { query.append(URLQueryItem(name: "_conv_low_cache", value: "1")) }
        if let token = settings.debugToken { query.append(URLQueryItem(name: "debug_token", value: token)) }
        if !query.isEmpty { components.queryItems = query }
        guard let url = components.url else { throw TransportError.refused("config URL could not be built") }
        var request = HTTPRequest(method: .get, url: url, headers: [("Accept", "application/json")],
                                  timeout: settings.requestTimeout)
        if let secret = settings.sdkKeySecret, !secret.isEmpty { request.setHeader("Authorization", "Bearer \(secret)") }
        if let etag { request.setHeader("If-None-Match", etag) }
        if let lastModified { request.setHeader("If-Modified-Since", lastModified) }
        return request
    }

    public func run(deliver: @escaping @Sendable (ConfigDocument) async -> Void) async throws {
        try await run(deliver: deliver, report: { _ in })
    }

    /// Runs as ``run(deliver:)``, reporting each 304 as `.confirmed` and each failed fetch.
    public func run(deliver: @escaping @Sendable (ConfigDocument) async -> Void,
                    report: @escaping @Sendable (ConfigSourceReport) -> Void) async throws {
        guard !settings.sdkKey.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw ConfigSourceError.emptySDKKey
        }
        if let problem = Self.problem(withKey: settings.sdkKey) { throw ConfigSourceError.invalidSDKKey(problem) }
        _ = try settings.policy.url(settings.endpoint)
        if let cached = loadCache() {
            status.withValue { $0.delivered = true }
            await deliver(ConfigDocument(bytes: cached, origin: .cache, confirmedAt: loadConfirmation()))
        }
        let registration = coordinator.register(deliver: deliver, report: report)
        defer { coordinator.unregister(registration) }
        var failures = 0
        while !Task.isCancelled {
            let wait: Duration
            switch await pollOnce() {
            case .updated, .unchanged:
                failures = 0
                wait = jittered(settings.refreshInterval)
            case .failed:
                wait = settings.retry.delay(attempt: failures, unit: random())
                failures += 1
            }
            try? await clock.sleep(for: wait)
        }
    }

    /// The outcome of one fetch.
    package enum FetchResult: Sendable {
        /// A usable config, with the `ETag` and `Last-Modified` the server sent.
        case fresh(Data, validators: ConfigValidators)
        /// 304: the current config stands.
        case notModified
        /// Nothing usable came; the current config stands.
        case failed(ConfigFetchError)
    }

    /// Performs one fetch (no caching, no delivery); failures are logged and returned typed.
    package func fetch(etag: String?, lastModified: String? = nil) async -> FetchResult {
        let result = await attempt(ConfigValidators(etag: etag, lastModified: lastModified))
        status.withValue { status in
            switch result {
            case .failed(let error): status.lastFailure = describe(error)
            case .fresh, .notModified: status.lastFailure = nil
            }
        }
        return result
    }

    /// A failure as `ready(timeout:)` reports it: what went wrong, and the request it went wrong on.
    func describe(_ error: ConfigFetchError) -> String {
        var target = "\(settings.endpoint)/config/\(settings.sdkKey)"
        if let url = try? request(etag: nil).url, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) {
            components.query = nil
            target = components.string ?? target
        }
        var text = "config fetch from \(target) failed: \(error)"
        if case .httpStatus(let status) = error, (400..<500).contains(status), status != 408, status != 429 {
            text += " (is the SDK key \(settings.sdkKey.prefix(64)) right?)"
        }
        return text
    }

    /// What the log says a failure leaves: the config in use, or none yet.
    private var consequence: String {
        status.withValue { $0.delivered } ? "keeping the current config" : "no config yet; retrying"
    }

    private func attempt(_ validators: ConfigValidators) async -> FetchResult {
        let response: HTTPResponse
        do {
            response = try await transport.sendAsConvertAgent(try request(etag: validators.etag,
                                                                          lastModified: validators.lastModified))
        } catch let error as TransportError {
            log.warn("config fetch failed: \(error); \(consequence)")
            return .failed(.transport(error))
        } catch {
            log.warn("config fetch failed: \(error); \(consequence)")
            return .failed(.transport(.unreachable("\(error)")))
        }
        // Not decoded: whatever a 304 carries, the config in hand stands.
        if response.status == 304 {
            log.debug("config not modified")
            return .notModified
        }
        guard response.isSuccess else {
            log.warn("config fetch refused with HTTP \(response.status); \(consequence)")
            return .failed(.httpStatus(response.status))
        }
        do throws(ConfigDecodingError) {
            _ = try ConfigDecoder.decode(response.body)
        } catch {
            log.error("config fetch returned an unusable body (\(error.description)); \(consequence)")
            return .failed(.unusableBody(error))
        }
        return .fresh(response.body, validators: ConfigValidators(etag: response.header("ETag"),
                                                                  lastModified: response.header("Last-Modified")))
    }

    private func loadCache() -> Data? {
        guard let cache else { return nil }
        do {
            guard let bytes = try cache.read(cacheName) else { return nil }
            do throws(ConfigDecodingError) {
                _ = try ConfigDecoder.decode(bytes)
                return bytes
            } catch {
                log.warn("cached config is unusable (\(error.description)); deleted, fetching from the network")
                try? cache.remove(cacheName)
                return nil
            }
        } catch {
            log.warn("cached config unreadable: \(error)")
            return nil
        }
    }

    /// When the CDN last sent or confirmed the cached copy; `nil` when unknown.
    private func loadConfirmation() -> Date? {
        guard let bytes = try? cache?.read(confirmationName),
              let seconds = Double(String(decoding: bytes, as: UTF8.self)), seconds.isFinite else { return nil }
        return Date(timeIntervalSince1970: seconds)
    }

    /// Caches `bytes`, then records them confirmed now: a crash in between leaves the new copy
    /// with an older time, taken as older than it is, never as newer.
    func store(_ bytes: Data) {
        do {
            try cache?.write(bytes, to: cacheName)
            recordConfirmation()
        } catch {
            log.warn("config cache not written: \(error)")
        }
    }

    /// Records that the CDN sent or confirmed the cached copy now.
    func recordConfirmation() {
        do {
            try cache?.write(Data(String(Date().timeIntervalSince1970).utf8), to: confirmationName)
        } catch {
            log.warn("config cache confirmation time not written: \(error)")
        }
    }
}

/// Why a config fetch produced nothing usable.
package enum ConfigFetchError: Error, Sendable, Hashable, CustomStringConvertible {
    /// No response: unreachable, timed out, too large, refused.
    case transport(TransportError)
    /// A non-2xx, non-304 status.
    case httpStatus(Int)
    /// A 2xx whose body is not a config.
    case unusableBody(ConfigDecodingError)

    package var description: String {
        switch self {
        case .transport(let error): return error.description
        case .httpStatus(let status): return "HTTP \(status)"
        case .unusableBody(let error): return "unusable body: \(error.description)"
        }
    }
}

/// Why the remote source cannot run at all.
public enum ConfigSourceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The configuration's SDK key is empty: there is no config to fetch.
    case emptySDKKey
    /// The SDK key is too long or holds white space or control characters; the text says which.
    case invalidSDKKey(String)

    public var description: String {
        switch self {
        case .emptySDKKey: return "the SDK key is empty"
        case .invalidSDKKey(let why): return "the SDK key is not valid: \(why)"
        }
    }
}

extension ConfigFetchError: LocalizedError {
    /// The same text as ``description``.
    package var errorDescription: String? { description }
}

extension ConfigSourceError: LocalizedError {
    /// The same text as ``description``.
    public var errorDescription: String? { description }
}

extension RemoteConfigSource.Settings: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The settings with the secret and the debug token redacted.
    public var description: String {
        "Settings(sdkKey: \(sdkKey), sdkKeySecret: \(Self.redacted(sdkKeySecret)), environment: \(environment ?? "default"), "
            + "endpoint: \(endpoint), lowCache: \(lowCache), debugToken: \(Self.redacted(debugToken)), "
            + "refreshInterval: \(refreshInterval), requestTimeout: \(requestTimeout))"
    }

    /// The same redacted text as ``description``.
    public var debugDescription: String { description }

    /// What `dump` shows: the settings, redacted as in ``description``.
    public var customMirror: Mirror {
        Mirror(self, children: [
            "sdkKey": sdkKey, "sdkKeySecret": Self.redacted(sdkKeySecret), "environment": environment as Any,
            "endpoint": endpoint, "lowCache": lowCache, "debugToken": Self.redacted(debugToken),
            "refreshInterval": refreshInterval, "requestTimeout": requestTimeout, "retry": retry, "policy": policy,
        ], displayStyle: .struct)
    }

    private static func redacted(_ value: String?) -> String { value == nil ? "none" : "<redacted>" }
}

extension RemoteConfigSource: CustomStringConvertible, CustomReflectable {
    /// The source's settings, redacted.
    public var description: String { "RemoteConfigSource(\(settings))" }

    /// What `dump` shows: the redacted settings, not the transport or cache behind them.
    public var customMirror: Mirror {
        Mirror(self, children: ["settings": settings], displayStyle: .struct)
    }
}
