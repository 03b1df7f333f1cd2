/// A fast 64-bit hash for in-memory lookup keys such as visitor ids.
///
/// Seeded randomly once per process, like Swift's `Hasher`, so visitor-supplied ids cannot be
/// chosen to collide in a hash table. Values differ between runs: never persist them. Not a
/// bucketing hash (that is ``MurmurHash3``) and not cryptographic.
///
/// ```swift
/// let h = KeyHash.hash64("visitor-1")
/// let pair = KeyHash.combine(KeyHash.hash64("10022898-10025986"), h)
/// ```
@usableFromInline package enum KeyHash {
    @usableFromInline
    static let seed: UInt64 = UInt64.random(in: 1...UInt64.max)

    @inlinable @inline(__always)
    static func mix(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let product = a.multipliedFullWidth(by: b)
        return product.high ^ product.low
    }

    /// Hashes the UTF-8 bytes of `string` (in place for native strings).
    @inlinable
    package static func hash64(_ string: String) -> UInt64 {
        string.utf8Bytes { hash64(bytes: $0) }
    }

    /// Hashes a buffer of bytes.
    @inlinable
    package static func hash64(bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        let count = bytes.count
        var h = seed ^ (UInt64(truncatingIfNeeded: count) &* 0x9E37_79B9_7F4A_7C15)
        guard let base = bytes.baseAddress else { return mix(h, 0xE703_7ED1_A0B4_28DB) }
        let raw = UnsafeRawPointer(base)
        var offset = 0
        while offset + 8 <= count {
            h = mix(h ^ raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self), 0xA076_1D64_78BD_642F)
            offset += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while offset < count {
            tail |= UInt64(base[offset]) << shift
            shift += 8
            offset += 1
        }
        return mix(h ^ tail ^ 0x8EBC_6AF0_9C88_C6E3, 0xE703_7ED1_A0B4_28DB)
    }

    /// Combines two hashes into one (order matters).
    @inlinable
    package static func combine(_ first: UInt64, _ second: UInt64) -> UInt64 {
        mix(first ^ 0x5895_45D4_F1C2_1A9B, second ^ seed)
    }
}

extension String {
    /// `body` of the string's UTF-8 bytes, borrowed in place where the storage allows:
    /// `withUTF8` needs a mutable copy, which retains the storage.
    @inlinable
    package func utf8Bytes<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if let result = utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = self
        return copy.withUTF8(body)
    }
}
