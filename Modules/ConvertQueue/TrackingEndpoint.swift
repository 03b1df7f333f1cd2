import ConvertTransport
import Foundation

/// Where tracking batches go: `{endpoint with [project_id] replaced}/track/{sdkKey}`.
///
/// Without an SDK key (an SDK started from config data alone) the path ends with
/// `{accountId}/{projectId}` of the events, as Convert's JavaScript SDK sends it.
public struct TrackingEndpoint: Sendable, Hashable {
    /// The endpoint with `[project_id]` in it.
    public let template: String
    /// The SDK key the path ends with; empty for `{accountId}/{projectId}`.
    public let sdkKey: String
    /// Which schemes are allowed.
    public let policy: EndpointPolicy
    /// Whether an SDK key was given (not empty or white space).
    package let hasSDKKey: Bool
    // Worked out once, as every batch goes through `url`: the template around its
    // `[project_id]`s, and the SDK key percent-encoded.
    private let templateParts: [String]
    private let encodedSDKKey: String

    /// An endpoint for one SDK key.
    public init(template: String, sdkKey: String, policy: EndpointPolicy = EndpointPolicy()) {
        self.template = template
        self.sdkKey = sdkKey
        self.policy = policy
        hasSDKKey = !sdkKey.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty
        templateParts = template.components(separatedBy: "[project_id]")
        encodedSDKKey = sdkKey.addingPercentEncoding(
            withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "?#"))) ?? sdkKey
    }

    /// The URL for a project's batches; throws when the scheme is not allowed.
    package func url(projectId: String) throws -> URL {
        try url(accountId: "", projectId: projectId)
    }

    /// The URL for the batches of an account's project; throws when the scheme is not allowed,
    /// or when an id is not an id (it comes from the config, and goes into the host name).
    package func url(accountId: String, projectId: String) throws -> URL {
        guard Self.isId(projectId) else { throw TransportError.refused("project id \"\(projectId.prefix(64))\" is not an id") }
        if !hasSDKKey, !Self.isId(accountId) {
            throw TransportError.refused("account id \"\(accountId.prefix(64))\" is not an id")
        }
        var base = templateParts.joined(separator: projectId)
        while base.hasSuffix("/") { base.removeLast() }
        // Ids are letters, digits, `-` and `_`: nothing in them needs percent-encoding.
        let key = hasSDKKey ? encodedSDKKey : accountId + "/" + projectId
        return try policy.url("\(base)/track/\(key)")
    }

    /// Letters, digits, `-` and `_`, 1 to 64 of them: what Convert's ids are made of, and
    /// nothing that could change a URL's host or path.
    static func isId(_ text: String) -> Bool {
        let bytes = text.utf8
        return !bytes.isEmpty && bytes.count <= 64 && bytes.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
    }
}
