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
    private var asked = [Asked?](repeating: nil, count: 16)
    // Unretained, kept by `owned`, which only grows: a lookup hands out the counter without
    // retaining it, since every core retaining the same counter would contend for its
    // reference count's cache line.
    private var counters = [Unmanaged<Counter>?](repeating: nil, count: 16)
    private var owned: [Counter] = []
    private(set) var count = 0

    /// The counter of `asked`, unretained (the table keeps it as long as it lives), if the
    /// table has it.
    func counter(for asked: Asked, hash: UInt64) -> Unmanaged<Counter>? {
        slot(of: asked, hash: hash).flatMap { counters[$0] }
    }

    private func slot(of asked: Asked, hash: UInt64) -> Int? {
        self.asked.withUnsafeBufferPointer { entries in
            hashes.withUnsafeBufferPointer { hashes in
                let mask = hashes.count - 1
                var slot = Int(truncatingIfNeeded: hash) & mask
                while hashes[slot] != 0 {
                    if hashes[slot] == hash, entries[slot] == asked { return slot }
                    slot = (slot + 1) & mask
                }
                return nil
            }
        }
    }

    mutating func insert(_ counter: Counter, for asked: Asked, hash: UInt64) {
        guard slot(of: asked, hash: hash) == nil else { return }
        if 2 * (count + 1) > hashes.count { grow() }
        owned.append(counter)
        place(Unmanaged.passUnretained(counter), asked, hash)
        count += 1
    }

    private mutating func place(_ counter: Unmanaged<Counter>, _ asked: Asked, _ hash: UInt64) {
        let mask = hashes.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while hashes[slot] != 0 { slot = (slot + 1) & mask }
        hashes[slot] = hash
        self.asked[slot] = asked
        counters[slot] = counter
    }

    private mutating func grow() {
        let old = (hashes, asked, counters)
        hashes = [UInt64](repeating: 0, count: old.0.count * 2)
        asked = [Asked?](repeating: nil, count: hashes.count)
        counters = [Unmanaged<Counter>?](repeating: nil, count: hashes.count)
        for slot in old.0.indices where old.0[slot] != 0 {
            place(old.2[slot]!, old.1[slot]!, old.0[slot])
        }
    }

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
