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
}
