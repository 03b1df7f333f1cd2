import Foundation

/// A storage failure, with the file or key it concerns.
public struct StorageError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was attempted, e.g. `"write"` or `"open"`.
    public let operation: String
    /// The file or key it concerned.
    public let target: String
    /// Why it failed, in words (an `errno` description, say).
    public let reason: String

    /// An error for `operation` on `target`.
    public init(operation: String, target: String, reason: String) {
        self.operation = operation
        self.target = target
        self.reason = reason
    }

    public var description: String { "\(operation) \(target) failed: \(reason)" }
}

/// Named blobs: the config cache, the auto visitor id.
///
/// Implementation requirements: safe to call from any thread; `write` replaces the blob
/// atomically (a reader sees the old or the new bytes, never a mix, even after a crash).
public protocol ByteStore: Sendable {
    /// The blob named `name`, `nil` when there is none.
    func read(_ name: String) throws -> Data?
    /// Replaces the blob named `name` atomically.
    func write(_ data: Data, to name: String) throws
    /// Deletes the blob named `name`; deleting a missing blob is not an error.
    func remove(_ name: String) throws
}

/// A durable, ordered log of records awaiting acknowledgement: the tracking queue's safety net.
///
/// Implementation requirements: `append` returns only once the record would survive the
/// process being killed; `pending` returns unacknowledged records in append order, their
/// sequence numbers increasing; safe to call from any thread.
public protocol EventJournal: Sendable {
    /// Records `payload`; returns its sequence number.
    func append(_ payload: Data) throws -> UInt64
    /// Marks records as delivered; they are not returned by `pending` again.
    func acknowledge(_ sequences: [UInt64]) throws
    /// The records not yet acknowledged, oldest first.
    func pending() throws -> [(sequence: UInt64, payload: Data)]
    /// Records `payload`, an event of `visitor`, so that a forget of the visitor can find it.
    func append(_ payload: Data, visitor: VisitorKey) throws -> UInt64
    /// Erases every record of `visitor` from storage now, acknowledged ones included, and, for
    /// a journal that other processes share, has them erase theirs; returns the sequences of
    /// the pending records erased.
    func forget(_ visitor: VisitorKey) throws -> [UInt64]
    /// The pending records whose visitor was forgotten (by another process sharing the
    /// journal's storage) after they were written, erased; the caller must not send them.
    func takeForgotten() -> [UInt64]
}

extension EventJournal {
    /// A journal that does not know visitors records the payload alone.
    public func append(_ payload: Data, visitor: VisitorKey) throws -> UInt64 { try append(payload) }
    /// A journal that does not know visitors cannot find the records of one: the caller
    /// acknowledges the pending ones it holds.
    public func forget(_ visitor: VisitorKey) throws -> [UInt64] { [] }
    /// A journal of one process learns of forgets only through ``forget(_:)``.
    public func takeForgotten() -> [UInt64] { [] }
}

/// Visitor ids kept in a ``ByteStore`` under one name.
public struct ByteStoreVisitorIdStore: VisitorIdStore {
    /// The store the id is kept in.
    public let store: any ByteStore
    /// The blob's name in the store (`"visitor-id"` by default).
    public let name: String

    /// Ids kept in `store` under `name`.
    public init(store: any ByteStore, name: String = "visitor-id") {
        self.store = store
        self.name = name
    }

    public func loadVisitorId() -> String? {
        guard let data = try? store.read(name), let id = String(data: data, encoding: .utf8), !id.isEmpty else { return nil }
        return id
    }

    public func saveVisitorId(_ id: String) {
        try? store.write(Data(id.utf8), to: name)
    }
}

extension StorageError: LocalizedError {
    /// The same text as ``description``.
    public var errorDescription: String? { description }
}
