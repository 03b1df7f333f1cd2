import CoreMetrics

/// Counters by the dimension values an evaluation asks for, found without hashing whole
/// strings: a key's hash reads its length and its first and last eight bytes, which tells
/// apart the flag keys and variants a config holds, and a full comparison settles each match.
/// Open addressing, linear probing, at most half full.
struct CounterTable {
    /// What an increment asks for, before bounding.
    struct Asked {
        var key: String
        var variant: String?
        /// Numbers the values of the other dimensions, which take few.
        var tag: Int
    }

    private var hashes = [UInt64](repeating: 0, count: 16)
    // The asked combination of each slot in three arrays, so that a lookup compares them in
    // place instead of building (and retaining the strings of) an `Asked` per evaluation.
    private var keys = [String](repeating: "", count: 16)
    private var variants = [String?](repeating: nil, count: 16)
    private var tags = [Int](repeating: 0, count: 16)
    // Unretained, kept by `owned`, which only grows: a lookup hands out the counter without
    // retaining it, since every core retaining the same counter would contend for its
    // reference count's cache line.
    private var counters = [Unmanaged<Counter>?](repeating: nil, count: 16)
    private var owned: [Counter] = []
    private(set) var count = 0

    /// The counter of `key`, `variant` and `tag` (whose hash is `hash`), unretained (the table
    /// keeps it as long as it lives), if the table has it.
    func counter(key: String, variant: String?, tag: Int, hash: UInt64) -> Unmanaged<Counter>? {
        slot(key: key, variant: variant, tag: tag, hash: hash).flatMap { counters[$0] }
    }

    private func slot(key: String, variant: String?, tag: Int, hash: UInt64) -> Int? {
        hashes.withUnsafeBufferPointer { hashes in
            keys.withUnsafeBufferPointer { keys in
                variants.withUnsafeBufferPointer { variants in
                    tags.withUnsafeBufferPointer { tags in
                        let mask = hashes.count - 1
                        var slot = Int(truncatingIfNeeded: hash) & mask
                        while hashes[slot] != 0 {
                            if hashes[slot] == hash, tags[slot] == tag, keys[slot] == key, variants[slot] == variant { return slot }
                            slot = (slot + 1) & mask
                        }
                        return nil
                    }
                }
            }
        }
    }

    mutating func insert(_ counter: Counter, for asked: Asked, hash: UInt64) {
        guard slot(key: asked.key, variant: asked.variant, tag: asked.tag, hash: hash) == nil else { return }
        if 2 * (count + 1) > hashes.count { grow() }
        owned.append(counter)
        place(Unmanaged.passUnretained(counter), asked.key, asked.variant, asked.tag, hash)
        count += 1
    }

    private mutating func place(_ counter: Unmanaged<Counter>, _ key: String, _ variant: String?, _ tag: Int, _ hash: UInt64) {
        let mask = hashes.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while hashes[slot] != 0 { slot = (slot + 1) & mask }
        hashes[slot] = hash
        keys[slot] = key
        variants[slot] = variant
        tags[slot] = tag
        counters[slot] = counter
    }

    private mutating func grow() {
        let old = (hashes, keys, variants, tags, counters)
        let size = old.0.count * 2
        hashes = [UInt64](repeating: 0, count: size)
        keys = [String](repeating: "", count: size)
        variants = [String?](repeating: nil, count: size)
        tags = [Int](repeating: 0, count: size)
        counters = [Unmanaged<Counter>?](repeating: nil, count: size)
        for slot in old.0.indices where old.0[slot] != 0 {
            place(old.4[slot]!, old.1[slot], old.2[slot], old.3[slot], old.0[slot])
        }
    }

    /// The hash of `key`, `variant` and `tag`, as ``hash(_:)`` computes it for an `Asked`.
    static func hash(key: String, variant: String?, tag: Int) -> UInt64 {
        var hash = mix(quickHash(key) ^ UInt64(truncatingIfNeeded: tag))
        hash = mix(hash ^ (variant.map(quickHash) ?? 0x2545_F491_4F6C_DD1D))
        return hash | 1
    }

    static func hash(_ asked: Asked) -> UInt64 {
        hash(key: asked.key, variant: asked.variant, tag: asked.tag)
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
