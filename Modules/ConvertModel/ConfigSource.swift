import Foundation

/// Config bytes and where they came from.
public struct ConfigDocument: Sendable, Hashable {
    /// Where a document came from.
    public enum Origin: String, Sendable, Hashable {
        /// Data the app handed over directly.
        case direct
        /// A cached copy from an earlier run.
        case cache
        /// A fresh fetch.
        case network
    }

    /// The config document, as served (JSON).
    public let bytes: Data
    /// Where the bytes came from.
    public let origin: Origin
    /// For a cached copy, when the CDN last sent or confirmed these bytes: the config is as old
    /// as that. `nil` on a cached copy means the time is unknown (a cache written by an earlier
    /// version), and the SDK takes the copy as stale; documents of other origins are as new as
    /// their delivery.
    public let confirmedAt: Date?

    /// A document of `bytes` from `origin`, confirmed by the CDN at `confirmedAt` (see ``confirmedAt``).
    public init(bytes: Data, origin: Origin, confirmedAt: Date? = nil) {
        self.bytes = bytes
        self.origin = origin
        self.confirmedAt = confirmedAt
    }
}

/// Where the SDK's config comes from: direct data, a cache, the CDN, or a test stub.
///
/// Implementation requirements: ``run(deliver:)`` runs for the life of the SDK and returns
/// when its task is cancelled (or when it has nothing more to deliver). It hands over each
/// document as it becomes available — a cache copy first when there is one, then live ones —
/// and keeps retrying after failures on its own schedule. It throws only when no config can
/// ever come (an empty SDK key, say).
public protocol ConfigSource: Sendable {
    /// Delivers documents to `deliver` until cancelled or exhausted.
    func run(deliver: @escaping @Sendable (ConfigDocument) async -> Void) async throws
    /// ``run(deliver:)``, also telling `report` when the config in hand was confirmed unchanged
    /// (an HTTP 304) or an attempt to get one failed, so the SDK can say how fresh it is.
    func run(deliver: @escaping @Sendable (ConfigDocument) async -> Void,
             report: @escaping @Sendable (ConfigSourceReport) -> Void) async throws

    /// Why the latest attempt to get a config failed, `nil` when it succeeded or none failed;
    /// ``ConvertSwiftSDK/ready(timeout:)`` reports it when it gives up.
    var lastFailure: String? { get }
}

/// What a config source says besides delivering documents.
public enum ConfigSourceReport: Sendable, Hashable {
    /// The config in hand is still current (the server answered "not modified").
    case confirmed
    /// An attempt to get a config failed, for this reason; the config in hand stands.
    case failed(String)
}

extension ConfigSource {
    /// No failure to report: the default for sources that cannot fail, or do not say why.
    public var lastFailure: String? { nil }

    /// Runs ``run(deliver:)``; a source that reports nothing besides its documents.
    public func run(deliver: @escaping @Sendable (ConfigDocument) async -> Void,
                    report: @escaping @Sendable (ConfigSourceReport) -> Void) async throws {
        try await run(deliver: deliver)
    }
}

/// A source that delivers one document handed over by the app.
public struct DirectConfigSource: ConfigSource {
    /// The config document it delivers (JSON).
    public let bytes: Data

    /// A source delivering `bytes` once, as `.direct`.
    public init(bytes: Data) { self.bytes = bytes }

    public func run(deliver: @escaping @Sendable (ConfigDocument) async -> Void) async throws {
        await deliver(ConfigDocument(bytes: bytes, origin: .direct))
    }
}
