/// Incremental MurmurHash3 x86_32: feed bytes in any number of pieces, then ``finalize()``.
///
/// Feeding `"ab"` then `"c"` gives the same hash as feeding `"abc"` at once.
@usableFromInline package struct MurmurHash3State: Sendable {
    @usableFromInline static let c1: UInt32 = 0xcc9e_2d51
    @usableFromInline static let c2: UInt32 = 0x1b87_3593

    @usableFromInline var h1: UInt32
    /// Bytes of an unfinished 4-byte block, little-endian, `pendingCount` of them.
    @usableFromInline var pending: UInt32 = 0
    @usableFromInline var pendingCount: Int = 0
    @usableFromInline var length: Int = 0

    /// Starts a hash with the given seed.
    @inlinable
    package init(seed: UInt32 = MurmurHash3.defaultSeed) {
        h1 = seed
    }

    @inlinable @inline(__always)
    static func mixBlock(_ k: UInt32) -> UInt32 {
        var k1 = k &* c1
        k1 = (k1 << 15) | (k1 >> 17)
        return k1 &* c2
    }

    @inlinable @inline(__always)
    mutating func absorbBlock(_ k: UInt32) {
        h1 ^= Self.mixBlock(k)
        h1 = (h1 << 13) | (h1 >> 19)
        h1 = h1 &* 5 &+ 0xe654_6b64
    }

    @inlinable @inline(__always)
    mutating func absorbByte(_ byte: UInt8) {
        pending |= UInt32(byte) << (8 * UInt32(pendingCount))
        pendingCount += 1
        if pendingCount == 4 {
            absorbBlock(pending)
            pending = 0
            pendingCount = 0
        }
    }

    /// Feeds the UTF-8 bytes of `string`.
    @inlinable
    package mutating func combine(_ string: String) {
        let handled: Void? = string.utf8.withContiguousStorageIfAvailable { buffer in
            combine(buffer: UnsafeRawBufferPointer(buffer))
        }
        if handled == nil {
            combine(bytes: string.utf8)
        }
    }

    /// Feeds a sequence of bytes.
    @inlinable
    package mutating func combine<Bytes: Sequence>(bytes: Bytes) where Bytes.Element == UInt8 {
        for byte in bytes {
            absorbByte(byte)
            length &+= 1
        }
    }

    /// Feeds raw bytes.
    @inlinable
    package mutating func combine(buffer: UnsafeRawBufferPointer) {
        var index = 0
        let count = buffer.count
        length &+= count
        while pendingCount != 0 && index < count {
            absorbByte(buffer[index])
            index += 1
        }
        while count - index >= 4 {
            absorbBlock(buffer.loadUnaligned(fromByteOffset: index, as: UInt32.self).littleEndian)
            index += 4
        }
        while index < count {
            absorbByte(buffer[index])
            index += 1
        }
    }

    /// Returns the 32-bit hash of everything fed so far.
    @inlinable
    package func finalize() -> UInt32 {
        var h = h1
        if pendingCount > 0 {
            h ^= Self.mixBlock(pending)
        }
        h ^= UInt32(truncatingIfNeeded: length)
        h ^= h >> 16
        h = h &* 0x85eb_ca6b
        h ^= h >> 13
        h = h &* 0xc2b2_ae35
        h ^= h >> 16
        return h
    }
}
