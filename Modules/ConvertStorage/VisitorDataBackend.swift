/// Visitor data kept outside the process and shared by several SDK instances (servers behind a
/// load balancer): Redis, or any key-value store that can set a field only when it is unset.
///
/// The decision path never calls it: a visitor is loaded into the local store before a request
/// is decided, and changes are written behind (see ``SharedVisitorDataStore``).
///
/// Implementation requirements: safe to call concurrently; a call that cannot reach the store
/// throws soon (a deadline, not a hang).
public protocol VisitorDataBackend: Sendable {
    /// The visitor's stored data, or `nil` when the visitor is unknown.
    func load(_ key: VisitorKey) async throws -> VisitorData?

    /// Merges `data` into the stored record and returns the record as stored after it.
    ///
    /// First writer wins for sticky decisions: an experience that already has a stored
    /// variation keeps it, whatever `data` says. Goals are united; locations and segments are
    /// replaced by `data`'s when it has any.
    func save(_ key: VisitorKey, _ data: VisitorData) async throws -> VisitorData

    /// Saves several visitors, as ``save(_:_:)`` each; results in order. Backends that can
    /// pipeline implement it with one round trip.
    func saveAll(_ records: [(VisitorKey, VisitorData)]) async throws -> [VisitorData]

    /// Marks `goalId` converted for the visitor unless it already is, atomically across every
    /// instance: `true` when this call marked it (this instance sends the conversion).
    func recordGoalOnce(_ key: VisitorKey, goalId: String) async throws -> Bool
}

extension VisitorDataBackend {
    /// One ``save(_:_:)`` after another.
    public func saveAll(_ records: [(VisitorKey, VisitorData)]) async throws -> [VisitorData] {
        var out: [VisitorData] = []
        out.reserveCapacity(records.count)
        for (key, data) in records { out.append(try await save(key, data)) }
        return out
    }
}

/// How loading a visitor's shared data went.
public enum VisitorLoadResult: Sendable, Hashable {
    /// The stored data is now in the local store.
    case loaded
    /// The shared store does not know the visitor.
    case notFound
    /// The shared store could not be read; the visitor is decided from what this instance
    /// holds (as a new visitor if nothing), and the reason is logged.
    case failed(String)
    /// The SDK's visitor store is not shared: nothing to load.
    case notShared
}

/// A local visitor store backed by a shared one: decisions read and write the local store
/// synchronously; the SDK loads a visitor before deciding (when the app asks), and changes are
/// written behind to the shared store.
///
/// Implementation requirements: as ``VisitorDataStore``; ``load(_:)``, ``save(_:)`` and
/// ``recordGoalOnce(_:goalId:)`` never throw: a shared store that is down or slow is logged,
/// counted, and retried later.
public protocol SharedVisitorDataStore: VisitorDataStore {
    /// Loads the visitor's shared data into the local store, merged with what is there.
    func load(_ key: VisitorKey) async -> VisitorLoadResult
    /// Writes the visitor's pending changes now; `true` once the shared store has them.
    @discardableResult
    func save(_ key: VisitorKey) async -> Bool
    /// ``VisitorDataBackend/recordGoalOnce(_:goalId:)`` through to the shared store; `nil` when
    /// it cannot be reached (the caller falls back to the local goal dedup).
    func recordGoalOnce(_ key: VisitorKey, goalId: String) async -> Bool?

    /// When the SDK claims a visitor's first decision for an experience in the shared store.
    var firstDecisionClaim: FirstDecisionClaim { get }

    /// Stores `variationId` as the visitor's decision for `experienceId` in the shared store
    /// unless another instance stored one first, atomically: the variation that holds there
    /// (this one, or the one stored first). `nil` when the shared store could not answer within
    /// the store's bound (the local decision stands). Blocks the calling thread for at most that
    /// bound: the SDK calls it while answering, with ``FirstDecisionClaim/beforeAnswering``.
    func claimVariation(_ key: VisitorKey, experienceId: String, variationId: String) -> String?

    /// ``claimVariation(_:experienceId:variationId:)`` without blocking a thread: the SDK calls
    /// it after answering, with ``FirstDecisionClaim/afterAnswering``.
    func claimVariationLater(_ key: VisitorKey, experienceId: String, variationId: String) async -> String?
}

/// When a visitor's first decision for an experience is claimed in a shared store, so that two
/// instances deciding the same new visitor at once agree on one variation and send one
/// bucketing event.
public enum FirstDecisionClaim: Sendable, Hashable {
    /// Before the decision is answered: every instance answers the variation that holds (one
    /// answer), at the cost of one round trip on a visitor's first sight of an experience.
    case beforeAnswering
    /// After answering: the bucketing event is sent only by the instance whose claim holds (one
    /// exposure), but during a config change two instances may answer differently once.
    case afterAnswering
    /// Never: each instance decides alone; decisions written behind settle on the first stored.
    case never
}

extension SharedVisitorDataStore {
    /// The variation given, claimed by nobody else: for stores that do not claim.
    public func claimVariation(_ key: VisitorKey, experienceId: String, variationId: String) -> String? { variationId }

    /// Runs the blocking ``claimVariation(_:experienceId:variationId:)``.
    public func claimVariationLater(_ key: VisitorKey, experienceId: String, variationId: String) async -> String? {
        claimVariation(key, experienceId: experienceId, variationId: variationId)
    }
}
