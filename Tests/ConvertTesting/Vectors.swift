import Foundation

/// One MurmurHash3 parity vector (`hash-parity-vectors.json`).
public struct HashParityVector: Decodable, Sendable {
    /// What the vector exercises.
    public let description: String
    /// The visitor id hashed.
    public let visitorId: String
    /// The experience id hashed before the visitor id.
    public let experienceId: String
    /// The MurmurHash3 seed.
    public let seed: UInt32
    /// The bucket value, `0...9999`.
    public let expectedValue: Int
    /// The variation `buckets` gives for the value; `nil` when it falls outside every bucket.
    public let expectedVariationId: String?
    /// Variation id → percentage, walked in sorted order (every vector lists them sorted).
    public let buckets: [String: Double]
}

/// One cross-SDK bucketing case (`cross-sdk-bucketing-vectors.json`).
public struct BucketingVector: Decodable, Sendable {
    /// One variation of the case, as the config writes it.
    public struct Arm: Decodable, Sendable {
        /// The variation id.
        public let id: String
        /// `traffic_allocation`; `nil` when absent.
        public let trafficAllocation: Double?
        /// The variation's `status`; `nil` when absent.
        public let status: String?

        enum CodingKeys: String, CodingKey {
            case id, status
            case trafficAllocation = "traffic_allocation"
        }
    }

    /// What the case exercises.
    public let description: String
    /// The experience id hashed.
    public let experienceId: String
    /// The visitor id hashed.
    public let visitorId: String
    /// The experience's `version`; above 11 the anchored layout applies.
    public let version: Double
    /// The experience's variations, in config order.
    public let variations: [Arm]
    /// The variation id every SDK gives; `nil` for none.
    public let expected: String?
}

extension Fixtures {
    /// The 74 hash parity vectors.
    public static func hashParityVectors() throws -> [HashParityVector] {
        try decode([HashParityVector].self, from: .hashParityVectors)
    }

    /// The 59 cross-SDK bucketing vectors.
    public static func bucketingVectors() throws -> [BucketingVector] {
        try decode([BucketingVector].self, from: .crossSDKBucketingVectors)
    }
}
