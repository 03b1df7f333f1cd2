import ConvertHashing

/// Turns a visitor into a bucket value in `0...9999`.
public enum BucketValue {
    /// The number of buckets: values run from 0 to `scale - 1`.
    public static let scale = 10_000

    /// The bucket value of `visitorId` for `experienceId`:
    /// `Int(Double(murmur3(experienceId + visitorId, seed)) / 2^32 * 10000)`.
    ///
    /// ```swift
    /// BucketValue.of(experienceId: "exp_1", visitorId: "visitor_001")   // 2987
    /// ```
    @inlinable
    public static func of(experienceId: String, visitorId: String, seed: UInt32 = MurmurHash3.defaultSeed) -> Int {
        fromHash(MurmurHash3.hash32(experienceId, visitorId, seed: seed))
    }

    /// Scales a 32-bit hash to a bucket value.
    @inlinable
    package static func fromHash(_ hash: UInt32) -> Int {
        Int(Double(hash) / 4_294_967_296.0 * Double(scale))
    }
}
