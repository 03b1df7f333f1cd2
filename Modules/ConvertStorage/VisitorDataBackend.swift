import ConvertJSON

/// Visitor data kept outside the process and shared by several SDK instances (servers behind a
/// load balancer): Redis, or any key-value store that can set a field only when it is unset.
///
/// The decision path calls it only to claim a visitor's first decision for an experience
/// (``claimVariation(_:experienceId:variationId:)``, one round trip, bounded); a visitor is
/// loaded into the local store before a request is decided, and changes are written behind
/// (see ``SharedVisitorDataStore``).
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

    /// Stores `variationId` as the visitor's decision for `experienceId` unless a decision for it
    /// is stored already, atomically across every instance, and renews the record's time to
    /// live: the variation stored (this one, or the one stored first) and whether this call
    /// stored it. The decision is stored where ``load(_:)`` reads decisions, so a later load on
    /// any instance sees it.
    ///
    /// Blocks the calling thread, for at most the backend's own deadline (then it throws): the
    /// shared store calls it while a decision is being answered.
    func claimVariation(_ key: VisitorKey, experienceId: String, variationId: String) throws -> VariationClaim

    /// ``claimVariation(_:experienceId:variationId:)`` without blocking a thread: the shared
    /// store calls it after a decision was answered.
    func claimVariationLater(_ key: VisitorKey, experienceId: String, variationId: String) async throws -> VariationClaim

    /// Writes each visitor's changes (as the shared store writes them behind), without reading
    /// the records back: decisions only where none is stored (first writer wins), goals added,
    /// locations and segments replaced when given, the time to live renewed when asked. Returns,
    /// for each change in order, the decisions another instance had stored first where they
    /// differ from the change's (experience id → the stored variation id; empty when all held).
    /// A change the backend can never store (its record holds data of another kind) is left out;
    /// the call throws when the backend cannot be reached or refuses a write it may take later
    /// (out of memory, read-only for now): the store then keeps the batch and sends it again, so
    /// a change a retry could store is never taken for written. Backends that can pipeline write
    /// a batch in one round trip.
    func merge(_ changes: [VisitorDataChanges]) async throws -> [[String: String]]

    /// Deletes everything stored for the visitor (a visitor who asked to be forgotten); a visitor
    /// the backend does not know is no error.
    func delete(_ key: VisitorKey) async throws

    /// Calls `handler` when the backend learns something about itself the shared store acts on:
    /// it became unreachable or reachable again, or it lost the data it held. Backends that
    /// cannot tell never call it; the store then goes by the outcome of its calls alone.
    func subscribe(_ handler: @escaping @Sendable (VisitorDataBackendEvent) -> Void)
}

/// What claiming a visitor's first decision for an experience found: the variation that holds
/// and whether this claim stored it. Only the instance whose claim stored it sends the bucketing
/// event: another that decided the same variation at the same moment did not decide first.
public struct VariationClaim: Sendable, Hashable {
    /// The variation stored: the one claimed, or the one another instance stored first.
    public var variationId: String
    /// Whether this claim stored it.
    public var isFirst: Bool

    /// A claim's outcome.
    public init(variationId: String, isFirst: Bool) {
        self.variationId = variationId
        self.isFirst = isFirst
    }
}

/// One visitor's changes since they were last written, as the shared store writes them behind
/// (``VisitorDataBackend/merge(_:)``).
public struct VisitorDataChanges: Sendable, Hashable {
    /// Whose changes.
    public var key: VisitorKey
    /// Decisions to store where none is stored (experience id → variation id).
    public var decisions: [String: String]
    /// Goals converted since.
    public var goals: Set<String>
    /// The visitor's locations, when they changed (`nil`: unchanged; empty: none now).
    public var locations: Set<String>?
    /// The visitor's segment values, when they changed (`nil`: unchanged).
    public var segmentValues: [String: JSONValue]?
    /// Whether the record's time to live is renewed (not when a claim or goal record just did).
    public var renewsExpiry: Bool

    /// Changes of `key`.
    public init(key: VisitorKey, decisions: [String: String] = [:], goals: Set<String> = [], locations: Set<String>? = nil,
                segmentValues: [String: JSONValue]? = nil, renewsExpiry: Bool = true) {
        self.key = key
        self.decisions = decisions
        self.goals = goals
        self.locations = locations
        self.segmentValues = segmentValues
        self.renewsExpiry = renewsExpiry
    }

    /// Every part of `data` (a full write: nothing assumed stored).
    public init(key: VisitorKey, all data: VisitorData) {
        self.init(key: key, decisions: data.bucketing, goals: data.storedGoals, locations: data.locations.isEmpty ? nil : data.locations,
                  segmentValues: data.segmentValues.isEmpty ? nil : data.segmentValues)
    }

    /// Whether there is nothing to write but, perhaps, the renewal.
    public var isEmpty: Bool { decisions.isEmpty && goals.isEmpty && locations == nil && segmentValues == nil }
}

/// An error about one visitor's record (it holds data of another kind, it cannot be decoded),
/// not about the backend: the shared store decides that visitor from what it holds and reports
/// it, without taking the backend for unreachable.
public protocol VisitorRecordError: Error {}

/// An error from one part of a backend made of several (a cluster node that is down while the
/// others answer): the shared store decides the call's visitors from what it holds, as in an
/// outage, but does not pause its calls for visitors the other parts hold.
public protocol VisitorBackendPartError: Error {}

/// What a ``VisitorDataBackend`` tells the shared store about itself.
public enum VisitorDataBackendEvent: Sendable, Hashable {
    /// Calls fail at once for now (a refused or broken connection, a peer that does not answer).
    case unavailable(reason: String)
    /// Calls reach the backend again after it was unavailable for `downFor`.
    case available(downFor: Duration)
    /// The backend lost the data it held (a Redis restarted without persistence, a flushed
    /// database): the store writes again what it holds of the visitors it saw recently.
    case dataLost
}

extension VisitorDataBackend {
    /// One ``save(_:_:)`` after another.
    public func saveAll(_ records: [(VisitorKey, VisitorData)]) async throws -> [VisitorData] {
        var out: [VisitorData] = []
        out.reserveCapacity(records.count)
        for (key, data) in records { out.append(try await save(key, data)) }
        return out
    }

    /// Runs the blocking ``claimVariation(_:experienceId:variationId:)``.
    public func claimVariationLater(_ key: VisitorKey, experienceId: String, variationId: String) async throws -> VariationClaim {
        try claimVariation(key, experienceId: experienceId, variationId: variationId)
    }

    /// ``saveAll(_:)`` of the changes as records, each stored record compared with the one
    /// written (locations cleared are not written: ``save(_:_:)`` keeps stored ones when given none).
    public func merge(_ changes: [VisitorDataChanges]) async throws -> [[String: String]] {
        let stored = try await saveAll(changes.map { change in
            (change.key, VisitorData(bucketing: change.decisions, goals: change.goals, segmentValues: change.segmentValues ?? [:],
                                     locations: change.locations ?? []))
        })
        return zip(changes, stored).map { change, stored in
            stored.bucketing.filter { experience, variation in
                change.decisions[experience].map { $0 != variation } ?? false
            }
        }
    }

    /// Backends that cannot delete a record throw: a visitor is never reported forgotten when
    /// the backend still holds its data.
    public func delete(_ key: VisitorKey) async throws {
        throw StorageError(operation: "delete", target: key.description, reason: "\(type(of: self)) cannot delete records")
    }

    /// Never calls `handler`: a backend that cannot tell.
    public func subscribe(_ handler: @escaping @Sendable (VisitorDataBackendEvent) -> Void) {}
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
    /// (this one, or the one stored first) and whether this claim stored it — only then does
    /// this instance send the bucketing event. `nil` when the shared store could not answer
    /// within the store's bound (the local decision stands, and is tracked here). Blocks the
    /// calling thread for at most that bound: the SDK calls it while answering, with
    /// ``FirstDecisionClaim/beforeAnswering``.
    func claimFirstDecision(_ key: VisitorKey, experienceId: String, variationId: String) -> VariationClaim?

    /// ``claimFirstDecision(_:experienceId:variationId:)`` without blocking a thread: the SDK
    /// calls it after answering, with ``FirstDecisionClaim/afterAnswering``.
    func claimFirstDecisionLater(_ key: VisitorKey, experienceId: String, variationId: String) async -> VariationClaim?

    /// Deletes the visitor's data here and in the shared store, with the changes not yet
    /// written behind; `true` once the shared store deleted it too.
    func forget(_ key: VisitorKey) async -> Bool
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
    public func claimFirstDecision(_ key: VisitorKey, experienceId: String, variationId: String) -> VariationClaim? {
        VariationClaim(variationId: variationId, isFirst: true)
    }

    /// Deletes the local copy only, and says the shared store still holds the visitor: for
    /// stores that cannot delete there.
    public func forget(_ key: VisitorKey) async -> Bool {
        removeData(for: key)
        return false
    }

    /// Runs the blocking ``claimFirstDecision(_:experienceId:variationId:)``.
    public func claimFirstDecisionLater(_ key: VisitorKey, experienceId: String, variationId: String) async -> VariationClaim? {
        claimFirstDecision(key, experienceId: experienceId, variationId: variationId)
    }
}
