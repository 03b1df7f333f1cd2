/// MurmurHash3, x86 32-bit variant, over UTF-8 bytes.
///
/// The Convert SDKs hash `experienceId + visitorId` with this function to place a visitor;
/// results are bit-identical with the JavaScript SDK for any seed.
///
/// ```swift
/// let h = MurmurHash3.hash32("100334665" + "visitor-1")          // seed 9999
/// let same = MurmurHash3.hash32("100334665", "visitor-1")        // no concatenation
/// ```
public enum MurmurHash3 {
    /// The seed every Convert SDK uses unless configured otherwise.
    public static let defaultSeed: UInt32 = 9999

    /// Hashes the UTF-8 bytes of `string`.
    ///
    /// Native Swift strings are hashed in place; no intermediate array is built.
    /// - Parameters:
    ///   - string: the text to hash.
    ///   - seed: the hash seed, ``defaultSeed`` when omitted.
    @inlinable
    public static func hash32(_ string: String, seed: UInt32 = defaultSeed) -> UInt32 {
        var state = MurmurHash3State(seed: seed)
        state.combine(string)
        return state.finalize()
    }

    /// Hashes the UTF-8 bytes of `first` followed by those of `second`, equal to
    /// `hash32(first + second)` without building the concatenated string.
    @inlinable
    public static func hash32(_ first: String, _ second: String, seed: UInt32 = defaultSeed) -> UInt32 {
        var state = MurmurHash3State(seed: seed)
        state.combine(first)
        state.combine(second)
        return state.finalize()
    }

    /// Hashes a sequence of bytes.
    @inlinable
    public static func hash32<Bytes: Sequence>(bytes: Bytes, seed: UInt32 = defaultSeed) -> UInt32
    where Bytes.Element == UInt8 {
        var state = MurmurHash3State(seed: seed)
        state.combine(bytes: bytes)
        return state.finalize()
    }
}
