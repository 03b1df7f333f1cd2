import ConvertHashing

/// Whose data a store entry is: a visitor of one project.
///
/// Carries its hash, computed once per visitor, so stores need not hash strings on every
/// call. ``storeKey`` is the string form (`"{accountId}-{projectId}-{visitorId}"`) for stores
/// that persist by text.
public struct VisitorKey: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// `"{accountId}-{projectId}"`.
    public let namespace: String
    /// The visitor id.
    public let visitorId: String
    /// A per-process hash of the namespace and visitor id (see `KeyHash`); never persist it.
    package let hashCode: UInt64

    /// A key in `namespace` (`"{accountId}-{projectId}"`), hashing both parts.
    public init(namespace: String, visitorId: String) {
        self.init(namespace: namespace, namespaceHash: KeyHash.hash64(namespace), visitorId: visitorId,
                  visitorHash: KeyHash.hash64(visitorId))
    }

    /// The key of `visitorId` in a project.
    package init(accountId: String, projectId: String, visitorId: String) {
        self.init(namespace: "\(accountId)-\(projectId)", visitorId: visitorId)
    }

    /// Builds a key from hashes already computed with `KeyHash.hash64`.
    package init(namespace: String, namespaceHash: UInt64, visitorId: String, visitorHash: UInt64) {
        self.namespace = namespace
        self.visitorId = visitorId
        hashCode = KeyHash.combine(namespaceHash, visitorHash)
    }

    /// Parses a ``storeKey``: the namespace is everything before the second `-`.
    public init?(storeKey: String) {
        guard let first = storeKey.firstIndex(of: "-"),
              let second = storeKey[storeKey.index(after: first)...].firstIndex(of: "-") else { return nil }
        self.init(namespace: String(storeKey[..<second]), visitorId: String(storeKey[storeKey.index(after: second)...]))
    }

    /// A key from a ``storeKey`` literal (tests, examples); without two `-`, the whole text is
    /// the visitor id in an empty namespace.
    public init(stringLiteral value: String) {
        self = VisitorKey(storeKey: value) ?? VisitorKey(namespace: "", visitorId: value)
    }

    /// `"{accountId}-{projectId}-{visitorId}"`.
    public var storeKey: String { namespace + "-" + visitorId }

    public var description: String { storeKey }

    public static func == (lhs: VisitorKey, rhs: VisitorKey) -> Bool {
        lhs.hashCode == rhs.hashCode && lhs.visitorId == rhs.visitorId && lhs.namespace == rhs.namespace
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(hashCode) }
}

/// The longest visitor id the SDK accepts, in UTF-8 bytes: what a context takes and what the
/// visitor cookie carries, one bound for both.
package enum VisitorIdBound {
    package static let maximumBytes = 1024
}
