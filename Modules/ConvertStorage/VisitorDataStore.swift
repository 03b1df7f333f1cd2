// The storage port's values (VisitorData, VisitorKey, …) are ConvertVisitor's; code that
// implements or calls the port needs only this module.
@_exported import ConvertVisitor

/// Per-visitor memory: sticky decisions, goal dedup, segments, locations.
///
/// Implementation requirements: safe to call from any thread; `update` must run its body and
/// store the result atomically with respect to other calls for the same key (two concurrent
/// conversions must not both see a goal as new). Calls sit on the decision path: keep them
/// in memory and O(1); persist behind them (a journal, a write-behind queue).
public protocol VisitorDataStore: Sendable {
    /// The data stored under `key`, if any.
    func data(for key: VisitorKey) -> VisitorData?
    /// Reads, changes and stores the data under `key` in one step; the body sees empty data for
    /// an unknown key. Returns what the body returns.
    @discardableResult
    func update<Result>(_ key: VisitorKey, _ body: (inout VisitorData) -> Result) -> Result
    /// Deletes everything stored under `key` (a visitor who asked to be forgotten), durably
    /// for stores that persist.
    func removeData(for key: VisitorKey)
    /// Writes pending changes to durable storage; returns how many records were written.
    func flush() async -> Int
    /// Finishes loading; the SDK's `ready()` awaits it. Stores that load from storage may
    /// start reading in their initializer and return at once; calls made before the load ends
    /// must wait for it or merge with it, never lose a write or serve stale data.
    func prepare() async
    /// Records the exposure `marker` of the visitor for every process sharing this store's
    /// storage, unless one recorded it first; `true` when this call recorded it, and so sends
    /// the exposure. A store of one process answers `true`: its ``update(_:_:)`` already
    /// recorded the marker once.
    func recordExposureOnce(_ key: VisitorKey, marker: String) -> Bool
}

extension VisitorDataStore {
    /// A store of one process: the marker recorded in the visitor's data is enough.
    public func recordExposureOnce(_ key: VisitorKey, marker: String) -> Bool { true }
}

extension VisitorDataStore {
    /// Nothing to load: returns at once.
    public func prepare() async {}

    /// Empties the record under `key`. Enough for stores that drop records left empty; a store
    /// that replays changes on load (a change log) deletes the record itself.
    public func removeData(for key: VisitorKey) {
        update(key) { $0 = VisitorData() }
    }
}
