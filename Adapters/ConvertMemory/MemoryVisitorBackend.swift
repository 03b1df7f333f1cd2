import ConvertStorage
import ConvertSynchronization
import Foundation

/// An in-process ``VisitorDataBackend`` with the shared store's semantics (first writer wins
/// per decision, goals recorded once, claims), for tests of several SDK instances without
/// Redis. It can be switched ``isAvailable`` off to play a backend that is down, and
/// ``loseData()`` plays a server restarted without persistence; subscribers hear of both, as a
/// Redis backend's do.
public final class MemoryVisitorBackend: VisitorDataBackend, Sendable, CustomStringConvertible {
    private struct State {
        var records: [VisitorKey: VisitorData] = [:]
        var available = true
        var calls = 0
        var unavailableSince: ContinuousClock.Instant?
        var subscribers: [@Sendable (VisitorDataBackendEvent) -> Void] = []
    }

    /// The backend being down.
    public struct Unavailable: Error, CustomStringConvertible {
        public var description: String { "the memory backend is switched off" }
    }

    private let state = Locked(State())

    /// An empty, available backend.
    public init() {}

    /// `the memory backend`, for log lines.
    public var description: String { "the memory backend" }

    /// Whether calls succeed; `false` makes every call throw ``Unavailable``. Switching it tells
    /// subscribers (``VisitorDataBackendEvent/unavailable(reason:)`` and
    /// ``VisitorDataBackendEvent/available(downFor:)``).
    public var isAvailable: Bool {
        get { state.value.available }
        set {
            let (event, subscribers) = state.withValue { state -> (VisitorDataBackendEvent?, [@Sendable (VisitorDataBackendEvent) -> Void]) in
                guard state.available != newValue else { return (nil, []) }
                state.available = newValue
                if newValue {
                    let since = state.unavailableSince ?? .now
                    state.unavailableSince = nil
                    return (.available(downFor: .now - since), state.subscribers)
                }
                state.unavailableSince = .now
                return (.unavailable(reason: Unavailable().description), state.subscribers)
            }
            if let event { for subscriber in subscribers { subscriber(event) } }
        }
    }

    /// Forgets every record and tells subscribers the data was lost, as a Redis restarted without
    /// persistence does.
    public func loseData() {
        let subscribers = state.withValue { state in
            state.records = [:]
            return state.subscribers
        }
        for subscriber in subscribers { subscriber(.dataLost) }
    }

    /// Calls made so far.
    package var calls: Int { state.value.calls }

    /// The stored record of `key`.
    public func record(_ key: VisitorKey) -> VisitorData? { state.value.records[key] }

    private func access<Result>(_ body: (inout State) -> Result) throws -> Result {
        try state.withValue { state in
            state.calls += 1
            guard state.available else { throw Unavailable() }
            return body(&state)
        }
    }

    public func load(_ key: VisitorKey) async throws -> VisitorData? {
        try access { $0.records[key] }
    }

    public func save(_ key: VisitorKey, _ data: VisitorData) async throws -> VisitorData {
        try access { state in Self.merge(data, into: &state.records[key]) }
    }

    public func recordGoalOnce(_ key: VisitorKey, goalId: String) async throws -> Bool {
        try access { state in
            var stored = state.records[key] ?? VisitorData()
            let first = stored.storedGoals.insert(goalId).inserted
            state.records[key] = stored
            return first
        }
    }

    public func claimVariation(_ key: VisitorKey, experienceId: String, variationId: String) throws -> VariationClaim {
        try access { state in
            var stored = state.records[key] ?? VisitorData()
            if let holder = stored.variationId(forExperienceId: experienceId) { return VariationClaim(variationId: holder, isFirst: false) }
            var bucketing = stored.bucketing
            bucketing[experienceId] = variationId
            stored.bucketing = bucketing
            state.records[key] = stored
            return VariationClaim(variationId: variationId, isFirst: true)
        }
    }

    public func delete(_ key: VisitorKey) async throws {
        try access { $0.records[key] = nil }
    }

    public func subscribe(_ handler: @escaping @Sendable (VisitorDataBackendEvent) -> Void) {
        state.withValue { $0.subscribers.append(handler) }
    }

    /// `data` merged into `stored` as a save does; the record after it.
    private static func merge(_ data: VisitorData, into stored: inout VisitorData?) -> VisitorData {
        var record = stored ?? VisitorData()
        var bucketing = record.bucketing
        for (experience, variation) in data.bucketing where bucketing[experience] == nil { bucketing[experience] = variation }
        record.bucketing = bucketing
        record.storedGoals = record.storedGoals.union(data.storedGoals)
        if !data.locations.isEmpty { record.locations = data.locations }
        if !data.segmentValues.isEmpty { record.segmentValues = data.segmentValues }
        stored = record
        return record
    }
}
