import ConvertEnvironment
import ConvertModel
import ConvertSynchronization
import Foundation

/// Whether the SDK can decide, and how fresh its config is.
///
/// ```swift
/// switch sdk.status {
/// case .ready: break
/// case .stale(let age, let cause): log("config \(age) old: \(cause)")
/// case .starting, .failed: return .serviceUnavailable
/// }
/// ```
public enum SDKStatus: Sendable, Hashable {
    /// No config yet, and none has failed for good.
    case starting
    /// A config is installed and was received or confirmed unchanged `configAge` ago.
    case ready(configAge: Duration)
    /// A config is installed but was last received or confirmed `configAge` ago, more than
    /// twice the refresh interval: decisions use it, and `cause` says why nothing newer came.
    case stale(configAge: Duration, cause: String)
    /// No config can come (an invalid config handed over directly, an empty SDK key, a source
    /// that gave up); decisions answer their defaults.
    case failed(cause: String)

    /// How long ago the installed config was received or confirmed; `nil` without one.
    public var configAge: Duration? {
        switch self {
        case .ready(let age), .stale(let age, _): age
        case .starting, .failed: nil
        }
    }

    /// Whether decisions run on a config (ready or stale).
    public var isDeciding: Bool { configAge != nil }
}

/// What the runtime knows of its config's freshness.
struct ConfigFreshness {
    /// The sleep clock's reading when a config was last installed, re-delivered or confirmed;
    /// before the clock's origin (negative) for a cached config confirmed before the start.
    var confirmedAt: Duration?
    /// Failed attempts to get a config since the SDK started.
    var failures = 0
    /// The latest failure's reason, cleared by a confirmation.
    var lastFailure: String?
    var listeners: [UUID: AsyncStream<SDKStatus>.Continuation] = [:]
}

extension SDKRuntime {
    /// The status now.
    var status: SDKStatus {
        let now = ports.sleepClock.elapsed
        let (confirmedAt, lastFailure) = freshness.withValue { ($0.confirmedAt, $0.lastFailure) }
        if let confirmedAt {
            let age = now - confirmedAt
            guard age > staleAfter else { return .ready(configAge: age) }
            return .stale(configAge: age, cause: lastFailure ?? "no fresh config for \(age)")
        }
        if case .failure(let error)? = readiness.settled { return .failed(cause: error.description) }
        return .starting
    }

    /// The age past which the config is stale: twice the refresh interval.
    var staleAfter: Duration { .milliseconds(2 * max(1000, configuration.dataRefreshIntervalMs)) }

    /// Notes that `document` was installed or re-delivered: a cached copy is as old as the CDN's
    /// last confirmation of it (the time unknown, as old as a stale config), any other is new.
    /// A cached copy never makes the config in hand younger.
    func configConfirmed(_ document: ConfigDocument) {
        guard document.origin == .cache else { return configConfirmed() }
        let now = ports.sleepClock.elapsed
        let age: Duration, cause: String?
        if let confirmedAt = document.confirmedAt {
            // The wall clock set back since the confirmation reads as no age, not a negative one.
            let seconds = max(0, Date().timeIntervalSince(confirmedAt))
            age = .milliseconds(Int64(min(seconds, 1e12) * 1000))
            cause = nil
        } else {
            age = staleAfter + .seconds(1)
            cause = "the cached config's age is unknown (cached by an earlier version)"
        }
        freshness.withValue {
            let restored = now - age
            if let confirmedAt = $0.confirmedAt, confirmedAt >= restored { return }
            $0.confirmedAt = restored
            $0.lastFailure = cause
        }
        announceStatus()
    }

    /// Notes that the config in hand is current (installed, re-delivered or confirmed).
    func configConfirmed() {
        let now = ports.sleepClock.elapsed
        freshness.withValue {
            $0.confirmedAt = now
            $0.lastFailure = nil
        }
        announceStatus()
    }

    /// Notes a failed attempt to get a config.
    func configFailed(_ reason: String) {
        freshness.withValue {
            $0.failures += 1
            $0.lastFailure = reason
        }
        announceStatus()
    }

    /// Tells every status stream the status now.
    func announceStatus() {
        let listeners = freshness.withValue { Array($0.listeners.values) }
        guard !listeners.isEmpty else { return }
        let current = status
        for listener in listeners { listener.yield(current) }
    }

    /// The status now, then after every change of config, freshness or readiness.
    func statusUpdates() -> AsyncStream<SDKStatus> {
        let (stream, continuation) = AsyncStream<SDKStatus>.makeStream(bufferingPolicy: .bufferingNewest(16))
        let id = UUID()
        continuation.onTermination = { [freshness] _ in freshness.withValue { $0.listeners[id] = nil } }
        freshness.withValue { $0.listeners[id] = continuation }
        continuation.yield(status)
        return stream
    }
}

extension ConvertSwiftSDK {
    /// Whether the SDK can decide and how fresh its config is: starting, ready or stale (with
    /// the config's age), or failed (with the cause). Read it from any thread.
    public var status: SDKStatus { runtime.status }

    /// The status now, then again whenever a config is installed or confirmed, a fetch fails,
    /// or readiness settles. The stream ends when the caller stops iterating it.
    public func statusUpdates() -> AsyncStream<SDKStatus> { runtime.statusUpdates() }

    /// Failed attempts to get a config since the SDK started.
    public var configFetchFailures: Int { runtime.freshness.withValue { $0.failures } }
}
