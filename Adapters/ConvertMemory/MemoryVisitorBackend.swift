import ConvertStorage
import ConvertSynchronization
import Foundation

/// An in-process ``VisitorDataBackend`` with the shared store's semantics (first writer wins
/// per decision, goals recorded once), for tests of several SDK instances without Redis. It
/// can be switched ``isAvailable`` off to play a backend that is down.
public final class MemoryVisitorBackend: VisitorDataBackend, Sendable {
    private struct State {
        var records: [VisitorKey: VisitorData] = [:]
        var available = true
        var calls = 0
    }

    /// The backend being down.
    public struct Unavailable: Error, CustomStringConvertible {
        public var description: String { "the memory backend is switched off" }
    }

    private let state = Locked(State())

    /// An empty, available backend.
    public init() {}

    /// Whether calls succeed; `false` makes every call throw ``Unavailable``.
    public var isAvailable: Bool {
        get { state.value.available }
        set { state.withValue { $0.available = newValue } }
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
        try access { state in
            var stored = state.records[key] ?? VisitorData()
            var bucketing = stored.bucketing
            for (experience, variation) in data.bucketing where bucketing[experience] == nil { bucketing[experience] = variation }
            stored.bucketing = bucketing
            stored.goals = stored.goals.union(data.goals)
            if !data.locations.isEmpty { stored.locations = data.locations }
            if !data.segmentValues.isEmpty { stored.segmentValues = data.segmentValues }
            state.records[key] = stored
            return stored
        }
    }

    public func recordGoalOnce(_ key: VisitorKey, goalId: String) async throws -> Bool {
        try access { state in
            var stored = state.records[key] ?? VisitorData()
            let first = stored.goals.insert(goalId).inserted
            state.records[key] = stored
            return first
        }
    }
}
