import CoreMetrics

/// Counters by the dimension values an evaluation asks for, found without hashing whole
/// strings: a key's hash reads its length and its first and last eight bytes, which tells
/// apart the flag keys and variants a config holds, and a full comparison settles each match.
/// Open addressing, linear probing, at most half full.
struct CounterTable {
    /// What an increment asks for, before bounding.
    struct Asked: Equatable {
        var key: String
        var variant: String?
        /// Numbers the values of the other dimensions, which take few.
        var tag: Int
    }

    private var hashes = [UInt64](repeating: 0, count: 16)
    private var entries = [(asked: Asked, counter: Counter)?](repeating: nil, count: 16)
    private(set) var count = 0

    func counter(for asked: Asked, hash: UInt64) -> Counter? {
        let mask = hashes.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while hashes[slot] != 0 {
            if hashes[slot] == hash, let entry = entries[slot], entry.asked == asked { return entry.counter }
            slot = (slot + 1) & mask
        }
        return nil
    }

    mutating func insert(_ counter: Counter, for asked: Asked, hash: UInt64) {
        if 2 * (count + 1) > hashes.count { grow() }
        let mask = hashes.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while hashes[slot] != 0 {
            if hashes[slot] == hash, entries[slot]?.asked == asked { return }
            slot = (slot + 1) & mask
        }
        hashes[slot] = hash
        entries[slot] = (asked, counter)
        count += 1
    }

    private mutating func grow() {
        let old = zip(hashes, entries)
        hashes = [UInt64](repeating: 0, count: hashes.count * 2)
        entries = [(asked: Asked, counter: Counter)?](repeating: nil, count: hashes.count)
        count = 0
        for (hash, entry) in old where hash != 0 {
            if let entry { insert(entry.counter, for: entry.asked, hash: hash) }
        }
    }

    /// `asked`'s hash, never 0 (the empty slot's).
    static func hash(_ asked: Asked) -> UInt64 {
        var hash = mix(quickHash(asked.key) ^ UInt64(truncatingIfNeeded: asked.tag))
        hash = mix(hash ^ (asked.variant.map(quickHash) ?? 0x2545_F491_4F6C_DD1D))
        return hash | 1
    }

    private static func quickHash(_ string: String) -> UInt64 {
        string.utf8.withContiguousStorageIfAvailable { bytes -> UInt64 in
            let count = bytes.count
            var hash = UInt64(truncatingIfNeeded: count) &* 0x9E37_79B9_7F4A_7C15
            if count >= 8 {
                let raw = UnsafeRawBufferPointer(bytes)
                hash = mix(hash ^ raw.loadUnaligned(as: UInt64.self))
                hash ^= raw.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
            } else {
                for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
            }
            return mix(hash)
        } ?? UInt64(truncatingIfNeeded: string.hashValue)
    }

    /// MurmurHash3's 64-bit finalizer.
    private static func mix(_ value: UInt64) -> UInt64 {
        var value = value
        value ^= value >> 33
        value &*= 0xFF51_AFD7_ED55_8CCD
        value ^= value >> 33
        value &*= 0xC4CE_B9FE_1A85_EC53
        return value ^ (value >> 33)
    }
}
