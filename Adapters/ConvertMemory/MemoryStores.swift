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
public final class MemoryVisitorDataStore: VisitorDataStore, Sendable {
    private let table: Locked<VisitorTable>

    /// The default number of visitors kept.
    public static let defaultCapacity = 10_000

    /// The most visitors held.
    public let capacity: Int

    public init(capacity: Int = MemoryVisitorDataStore.defaultCapacity) {
        let table = VisitorTable(capacity: capacity)
        self.capacity = table.capacity ?? Int.max
        self.table = Locked(table)
    }

    /// The number of visitors held.
    public var count: Int { table.withValue { $0.count } }

    public func data(for key: VisitorKey) -> VisitorData? {
        table.withValue { $0.value(for: key) }
    }

    @discardableResult
    public func update<Result>(_ key: VisitorKey, _ body: (inout VisitorData) -> Result) -> Result {
        table.withValue { $0.modify(key, body) }
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
