import ConvertStorage
import Foundation

/// Blobs in memory.
public final class MemoryByteStore: ByteStore, @unchecked Sendable {
    // `blobs` is guarded by `lock`.
    private let lock = NSLock()
    private var blobs: [String: Data] = [:]

    public init(_ initial: [String: Data] = [:]) { blobs = initial }

    public func read(_ name: String) throws -> Data? { lock.withLock { blobs[name] } }
    public func write(_ data: Data, to name: String) throws { lock.withLock { blobs[name] = data } }
    public func remove(_ name: String) throws { _ = lock.withLock { blobs.removeValue(forKey: name) } }

    /// The names held.
    public var names: [String] { lock.withLock { blobs.keys.sorted() } }
}

/// A journal in memory: survives nothing, costs nothing.
public final class MemoryEventJournal: EventJournal, @unchecked Sendable {
    // `records` and `next` are guarded by `lock`.
    private let lock = NSLock()
    private var records: [(sequence: UInt64, payload: Data)] = []
    private var next: UInt64 = 1

    public init() {}

    public func append(_ payload: Data) throws -> UInt64 {
        lock.withLock {
            defer { next += 1 }
            records.append((next, payload))
            return next
        }
    }

    public func acknowledge(_ sequences: [UInt64]) throws {
        let done = Set(sequences)
        lock.withLock { records.removeAll { done.contains($0.sequence) } }
    }

    public func pending() throws -> [(sequence: UInt64, payload: Data)] {
        lock.withLock { records }
    }
}
