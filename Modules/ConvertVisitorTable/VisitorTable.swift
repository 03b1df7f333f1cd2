import ConvertHashing
import ConvertStorage
import Foundation

/// An O(1) map from ``VisitorKey`` to ``VisitorData``, optionally bounded: the in-memory core
/// of the bundled visitor stores.
///
/// A bounded table evicts by the clock (second-chance) approximation of least recently used:
/// an entry read or changed since the eviction hand last passed it survives that pass. Unlike
/// an exact recency list, a lookup then writes nothing but one flag in the entry it found.
///
/// Built for millions of visitors: entries sit in one array of fixed-size slots, visitor ids
/// in one byte arena, and an open-addressing index of 8-byte entries finds them using the
/// key's precomputed hash. No per-visitor allocation besides the record's own words. Not
/// thread-safe: guard it with a lock.
///
/// ```swift
/// var table = VisitorTable(capacity: 100_000)
/// let key = VisitorKey(accountId: "10022898", projectId: "10025986", visitorId: "visitor-1")
/// table.modify(key) { $0.bucketing["100334665"] = "1003142550" }
/// ```
package struct VisitorTable {
    // 48 bytes: the id's length lives in the arena in front of its bytes (read there anyway to
    // compare them), and the index entry's 32 hash bits are the only fingerprint.
    private struct Slot {
        var data: VisitorData
        /// Where the id's length and bytes start in the arena; for a free slot, the next free
        /// slot or `UInt32.max`.
        var idOffset: UInt32
        var namespace: UInt16
        /// Used since the eviction hand last passed (bounded tables only).
        var referenced: Bool
        var live: Bool
    }

    /// The most entries kept; `nil` for no bound.
    package let capacity: Int?
    private var slots: [Slot] = []
    private var freeSlot = UInt32.max
    // 0 = empty; otherwise (upper 32 bits of the hash) << 32 | (slot + 1). The home bucket
    // comes from those upper bits too, so growing never has to read the slots.
    private var index: [UInt64]
    private var mask: Int
    private var arena: [UInt8] = []
    private var arenaGarbage = 0
    private var namespaces: [String] = []
    private var namespaceHashes: [UInt64] = []
    private var hand = 0
    /// The number of entries.
    package private(set) var count = 0

    /// Creates a table; past `capacity` entries (when given, at least 1) one not used since the
    /// eviction hand last passed it is dropped.
    package init(capacity: Int? = nil) {
        self.capacity = capacity.map { max(1, $0) }
        index = Array(repeating: 0, count: 64)
        mask = 63
    }

    /// The data for `key`, marking it used.
    package mutating func value(for key: VisitorKey) -> VisitorData? {
        guard let slot = find(key) else { return nil }
        touch(slot)
        return slots[slot].data
    }

    /// The data for `key` without changing recency.
    package func peek(_ key: VisitorKey) -> VisitorData? {
        find(key).map { slots[$0].data }
    }

    /// Changes the data for `key` in place (starting from empty data for a new key), marking it
    /// used; one lookup. Entries left empty are removed.
    @discardableResult
    package mutating func modify<Result>(_ key: VisitorKey, _ body: (inout VisitorData) -> Result) -> Result {
        if let slot = find(key) {
            touch(slot)
            let result = body(&slots[slot].data)
            if slots[slot].data.isEmpty { remove(slot: slot, hash: key.hashCode) }
            return result
        }
        var data = VisitorData()
        let result = body(&data)
        if !data.isEmpty { insert(key, data) }
        return result
    }

    /// Stores `data` under `key` (removing the entry when `data` is empty).
    package mutating func set(_ data: VisitorData, for key: VisitorKey) {
        modify(key) { $0 = data }
    }

    /// Removes the entry for `key`; returns its data.
    @discardableResult
    package mutating func removeValue(for key: VisitorKey) -> VisitorData? {
        guard let slot = find(key) else { return nil }
        let data = slots[slot].data
        remove(slot: slot, hash: key.hashCode)
        return data
    }

    /// Calls `body` with every entry, in no particular order.
    package func forEach(_ body: (VisitorKey, VisitorData) -> Void) {
        for entry in index where entry != 0 {
            let slot = Int(UInt32(truncatingIfNeeded: entry)) - 1
            body(key(of: slot), slots[slot].data)
        }
    }

    // MARK: Lookup

    private func find(_ key: VisitorKey) -> Int? {
        let tag = UInt32(truncatingIfNeeded: key.hashCode >> 32)
        var bucket = Int(tag) & mask
        while true {
            let entry = index[bucket]
            if entry == 0 { return nil }
            if UInt32(truncatingIfNeeded: entry >> 32) == tag {
                let slot = Int(UInt32(truncatingIfNeeded: entry)) - 1
                if matches(slot, key) { return slot }
            }
            bucket = (bucket + 1) & mask
        }
    }

    private func matches(_ slot: Int, _ key: VisitorKey) -> Bool {
        guard namespaces[Int(slots[slot].namespace)] == key.namespace else { return false }
        let (start, length) = idBytes(slot)
        func same(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
            guard bytes.count == length else { return false }
            guard let base = bytes.baseAddress else { return true }
            return arena.withUnsafeBufferPointer { memcmp($0.baseAddress! + start, base, length) == 0 }
        }
        return key.visitorId.utf8Bytes(same)
    }

    /// Where the id of the entry in `slot` starts in the arena, and its length in bytes.
    @inline(__always)
    private func idBytes(_ slot: Int) -> (start: Int, length: Int) {
        var position = Int(slots[slot].idOffset)
        var length = 0, shift = 0
        while true {
            let byte = arena[position]
            position += 1
            length |= Int(byte & 0x7F) << shift
            if byte < 0x80 { return (position, length) }
            shift += 7
        }
    }

    /// The arena bytes the entry in `slot` holds: its id and the id's length.
    private func arenaSize(_ slot: Int) -> Int {
        let (start, length) = idBytes(slot)
        return start + length - Int(slots[slot].idOffset)
    }

    /// The slot's key's hash, as `VisitorKey` computes it, without building the key.
    private func hashCode(of slot: Int) -> UInt64 {
        let (start, length) = idBytes(slot)
        let idHash = arena.withUnsafeBufferPointer { KeyHash.hash64(bytes: UnsafeBufferPointer(rebasing: $0[start..<(start + length)])) }
        return KeyHash.combine(namespaceHashes[Int(slots[slot].namespace)], idHash)
    }

    private func key(of slot: Int) -> VisitorKey {
        let (start, length) = idBytes(slot)
        let id = String(decoding: arena[start..<(start + length)], as: UTF8.self)
        return VisitorKey(namespace: namespaces[Int(slots[slot].namespace)], visitorId: id)
    }

    // MARK: Insert and remove

    private mutating func insert(_ key: VisitorKey, _ data: VisitorData) {
        if let capacity, count >= capacity { evictOne() }
        if (count + 1) * 4 > (mask + 1) * 3 { grow() }
        let offset = arena.count
        key.visitorId.utf8Bytes { bytes in
            // The length as 7-bit groups, low first, the high bit marking a group that follows.
            var length = bytes.count
            while length >= 0x80 {
                arena.append(UInt8(truncatingIfNeeded: length) | 0x80)
                length >>= 7
            }
            arena.append(UInt8(length))
            arena.append(contentsOf: bytes)
        }
        let slot = Slot(data: data, idOffset: UInt32(offset), namespace: namespaceNumber(key.namespace), referenced: false, live: true)
        let position: Int
        if freeSlot != UInt32.max {
            position = Int(freeSlot)
            freeSlot = slots[position].idOffset
            slots[position] = slot
        } else {
            position = slots.count
            slots.append(slot)
        }
        let tag = UInt32(truncatingIfNeeded: key.hashCode >> 32)
        var bucket = Int(tag) & mask
        while index[bucket] != 0 { bucket = (bucket + 1) & mask }
        index[bucket] = UInt64(tag) << 32 | UInt64(position + 1)
        count += 1
    }

    /// Removes the entry in `slot`, whose key hashes to `hash`.
    private mutating func remove(slot: Int, hash: UInt64) {
        let tag = UInt32(truncatingIfNeeded: hash >> 32)
        var bucket = Int(tag) & mask
        while Int(UInt32(truncatingIfNeeded: index[bucket])) - 1 != slot {
            guard index[bucket] != 0 else {
                // A key built with hashes of its own (`VisitorKey`'s hash initializer) may not
                // hash as its text does when eviction rebuilds it: find the entry by its slot.
                bucket = index.firstIndex { $0 != 0 && Int(UInt32(truncatingIfNeeded: $0)) - 1 == slot }!
                break
            }
            bucket = (bucket + 1) & mask
        }
        // Backward-shift deletion keeps every probe chain unbroken without tombstones.
        var hole = bucket
        var next = (hole + 1) & mask
        while index[next] != 0 {
            let home = Int(UInt32(truncatingIfNeeded: index[next] >> 32)) & mask
            let distanceNext = (next - home) & mask
            let distanceHole = (hole - home) & mask
            if distanceHole <= distanceNext {
                index[hole] = index[next]
                hole = next
            }
            next = (next + 1) & mask
        }
        index[hole] = 0
        arenaGarbage += arenaSize(slot)
        slots[slot].data = VisitorData()
        slots[slot].live = false
        slots[slot].idOffset = freeSlot
        freeSlot = UInt32(slot)
        count -= 1
        if arenaGarbage > max(4096, arena.count / 2) { compactArena() }
    }

    private mutating func grow() {
        let old = index
        index = Array(repeating: 0, count: old.count * 2)
        mask = index.count - 1
        for entry in old where entry != 0 {
            var bucket = Int(UInt32(truncatingIfNeeded: entry >> 32)) & mask
            while index[bucket] != 0 { bucket = (bucket + 1) & mask }
            index[bucket] = entry
        }
    }

    private mutating func compactArena() {
        var fresh: [UInt8] = []
        fresh.reserveCapacity(arena.count - arenaGarbage)
        for entry in index where entry != 0 {
            let slot = Int(UInt32(truncatingIfNeeded: entry)) - 1
            let from = Int(slots[slot].idOffset), size = arenaSize(slot)
            slots[slot].idOffset = UInt32(fresh.count)
            fresh.append(contentsOf: arena[from..<(from + size)])
        }
        arena = fresh
        arenaGarbage = 0
    }

    private mutating func namespaceNumber(_ namespace: String) -> UInt16 {
        if let last = namespaces.indices.last, namespaces[last] == namespace { return UInt16(last) }
        if let found = namespaces.firstIndex(of: namespace) { return UInt16(found) }
        precondition(namespaces.count < Int(UInt16.max), "more than 65,535 account-project namespaces in one table")
        namespaces.append(namespace)
        namespaceHashes.append(KeyHash.hash64(namespace))
        return UInt16(namespaces.count - 1)
    }

    // MARK: Recency

    @inline(__always)
    private mutating func touch(_ slot: Int) {
        if capacity != nil, !slots[slot].referenced { slots[slot].referenced = true }
    }

    /// Second chance: clears the flags of used entries until the hand meets an unused one.
    private mutating func evictOne() {
        while true {
            if hand >= slots.count { hand = 0 }
            let slot = hand
            hand += 1
            guard slots[slot].live else { continue }
            if slots[slot].referenced {
                slots[slot].referenced = false
            } else {
                remove(slot: slot, hash: hashCode(of: slot))
                return
            }
        }
    }
}
