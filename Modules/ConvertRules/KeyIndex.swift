/// A 64-bit hash of a string for ``KeyIndex``.
package protocol StringHash {
    /// The hash of `string`'s UTF-8 bytes.
    static func hash(_ string: String) -> UInt64
}

/// FNV-1a over a string's UTF-8 bytes: no seed or state, for the short keys of a rule set.
package enum FNV1a: StringHash {
    @inlinable
    package static func hash(_ string: String) -> UInt64 {
        // Over the contiguous bytes where there are some (always, but for a bridged string): the
        // view's own iterator checks every index it steps through.
        string.utf8.withContiguousStorageIfAvailable(hash(bytes:)) ?? hash(bytes: string.utf8)
    }

    @inlinable
    static func hash<Bytes: Sequence<UInt8>>(bytes: Bytes) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }
}

/// The positions of a fixed list of strings (rule keys, experience keys): an open-addressing
/// table of hashes, cheaper per lookup than hashing the string for a `Dictionary`. Of equal
/// strings, the first one's position is found.
package struct KeyIndex<Hash: StringHash>: Sendable {
    @usableFromInline let keys: [String]
    @usableFromInline let buckets: [Int32]  // position + 1; 0 = empty
    @usableFromInline let hashes: [UInt64]
    @usableFromInline let mask: Int

    /// Indexes `keys` by their positions.
    package init(_ keys: [String]) {
        var size = 8
        while size < keys.count * 2 { size <<= 1 }
        var buckets = [Int32](repeating: 0, count: size), hashes = [UInt64](repeating: 0, count: size)
        for (position, key) in keys.enumerated() {
            let hash = Hash.hash(key)
            var bucket = Int(truncatingIfNeeded: hash) & (size - 1)
            var known = false
            while buckets[bucket] != 0 {
                if hashes[bucket] == hash, keys[Int(buckets[bucket]) - 1] == key { known = true }
                bucket = (bucket + 1) & (size - 1)
            }
            if known { continue }
            buckets[bucket] = Int32(position + 1)
            hashes[bucket] = hash
        }
        self.keys = keys
        self.buckets = buckets
        self.hashes = hashes
        mask = size - 1
    }

    /// The position of `key` in the list (the first, if it is there more than once); inlinable so
    /// a caller in another module gets it specialised for its hash.
    @inlinable
    package func position(of key: String) -> Int? {
        let hash = Hash.hash(key)
        var bucket = Int(truncatingIfNeeded: hash) & mask
        while buckets[bucket] != 0 {
            let position = Int(buckets[bucket]) - 1
            if hashes[bucket] == hash, keys[position] == key { return position }
            bucket = (bucket + 1) & mask
        }
        return nil
    }
}
