import ConvertStorage
import ConvertSynchronization
import Foundation

/// Blobs in memory.
public final class MemoryByteStore: ByteStore, Sendable {
    private let blobs: Locked<[String: Data]>

    /// A store holding `initial` (name to bytes).
    public init(_ initial: [String: Data] = [:]) { blobs = Locked(initial) }

    public func read(_ name: String) throws -> Data? { blobs.value[name] }
    public func write(_ data: Data, to name: String) throws { blobs.withValue { $0[name] = data } }
    public func remove(_ name: String) throws { blobs.withValue { _ = $0.removeValue(forKey: name) } }

    /// The names held.
    package var names: [String] { blobs.value.keys.sorted() }
}

/// A journal in memory: survives nothing, costs nothing.
public final class MemoryEventJournal: EventJournal, Sendable {
    private struct State {
        var records: [(sequence: UInt64, payload: Data)] = []
        var next: UInt64 = 1
    }

    private let state = Locked(State())

    /// An empty journal; sequence numbers start at 1.
    public init() {}

    public func append(_ payload: Data) throws -> UInt64 {
        state.withValue { state in
            defer { state.next += 1 }
            state.records.append((state.next, payload))
            return state.next
        }
    }

    public func acknowledge(_ sequences: [UInt64]) throws {
        let done = Set(sequences)
        state.withValue { $0.records.removeAll { done.contains($0.sequence) } }
    }

    public func pending() throws -> [(sequence: UInt64, payload: Data)] {
        state.value.records
    }
}
