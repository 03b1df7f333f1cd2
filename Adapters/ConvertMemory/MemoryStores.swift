import ConvertStorage
import ConvertSynchronization
import ConvertVisitorTable
import Foundation

/// Visitor data in memory, bounded: past `capacity` visitors one not used lately is forgotten
/// (clock eviction, see ``VisitorTable``).
///
/// ```swift
/// let store = MemoryVisitorDataStore(capacity: 50_000)
/// ```
///
/// Stores of 4,096 visitors or more are split into 64 shards by visitor, each with its own lock,
/// so threads deciding for different visitors do not wait for each other. Each shard holds its
/// share of `capacity` plus an eighth of that, since visitors never spread evenly: such a store
/// holds up to `capacity` × 1.125 visitors.
public final class MemoryVisitorDataStore: VisitorDataStore, Sendable {
    private let shards: [Locked<VisitorTable>]
    private let shardMask: Int

    /// The default number of visitors kept.
    public static let defaultCapacity = 10_000

    /// Below this capacity the store is one shard, so eviction order and the bound are exact.
    package static let shardingThreshold = 4_096

    /// The shards of a store of ``shardingThreshold`` visitors or more.
    package static let shardCount = 64

    /// The most visitors held (see above for large stores).
    package let capacity: Int

    /// A store holding at most `capacity` visitors (at least 1), evicting the least recently used
    /// by the clock.
    public init(capacity: Int = MemoryVisitorDataStore.defaultCapacity) {
        let bounded = max(1, capacity)
        let count = bounded >= Self.shardingThreshold ? Self.shardCount : 1
        let perShard = bounded == Int.max || count == 1 ? bounded : bounded / count + bounded / count / 8
        shards = (0..<count).map { _ in Locked(VisitorTable(capacity: perShard)) }
        shardMask = count - 1
        self.capacity = bounded
    }

    @inline(__always)
    private func shard(_ key: VisitorKey) -> Locked<VisitorTable> {
        shards[Int(truncatingIfNeeded: key.hashCode) & shardMask]
    }

    /// The number of visitors held.
    public var count: Int { shards.reduce(0) { total, shard in total + shard.withValue { $0.count } } }

    public func data(for key: VisitorKey) -> VisitorData? {
        shard(key).withValue { $0.value(for: key) }
    }

    @discardableResult
    public func update<Result>(_ key: VisitorKey, _ body: (inout VisitorData) -> Result) -> Result {
        shard(key).withValue { $0.modify(key, body) }
    }

    public func flush() async -> Int { 0 }
}

/// An auto visitor id kept in memory for the life of the process.
public final class MemoryVisitorIdStore: VisitorIdStore, Sendable {
    private let id: Locked<String?>

    /// A store starting with `id`; `nil` until one is saved.
    public init(id: String? = nil) { self.id = Locked(id) }

    public func loadVisitorId() -> String? { id.value }
    public func saveVisitorId(_ id: String) { self.id.set(id) }
}
