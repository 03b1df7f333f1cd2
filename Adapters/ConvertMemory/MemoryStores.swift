import ConvertStorage
import ConvertSupport
import ConvertVisitorTable
import Foundation

/// Visitor data in memory, bounded: past `capacity` visitors one not used lately is forgotten
/// (clock eviction, see ``VisitorTable``).
///
/// ```swift
/// let store = MemoryVisitorDataStore(capacity: 50_000)
/// ```
public final class MemoryVisitorDataStore: VisitorDataStore, @unchecked Sendable {
    // `table` is guarded by `lock`.
    private let lock = NSLock()
    private var table: VisitorTable

    /// The default number of visitors kept.
    public static let defaultCapacity = 10_000

    public init(capacity: Int = MemoryVisitorDataStore.defaultCapacity) {
        table = VisitorTable(capacity: capacity)
    }

    /// The number of visitors held.
    public var count: Int { lock.withLock { table.count } }

    /// The most visitors held.
    public var capacity: Int { table.capacity ?? Int.max }

    public func data(for key: VisitorKey) -> VisitorData? {
        lock.withLock { table.value(for: key) }
    }

    @discardableResult
    public func update<Result>(_ key: VisitorKey, _ body: (inout VisitorData) -> Result) -> Result {
        lock.withLock { table.modify(key, body) }
    }

    public func flush() async -> Int { 0 }
}

/// An auto visitor id kept in memory for the life of the process.
public final class MemoryVisitorIdStore: VisitorIdStore, Sendable {
    private let id: Locked<String?>

    public init(id: String? = nil) { self.id = Locked(id) }

    public func loadVisitorId() -> String? { id.value }
    public func saveVisitorId(_ id: String) { self.id.set(id) }
}
