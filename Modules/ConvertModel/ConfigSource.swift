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

    /// A document of `bytes` from `origin`.
    public init(bytes: Data, origin: Origin) {
        self.bytes = bytes
        self.origin = origin
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

    /// Why the latest attempt to get a config failed, `nil` when it succeeded or none failed;
    /// ``ConvertSwiftSDK/ready(timeout:)`` reports it when it gives up.
    var lastFailure: String? { get }
}

extension ConfigSource {
    /// No failure to report: the default for sources that cannot fail, or do not say why.
    public var lastFailure: String? { nil }
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
