import Foundation

/// One MurmurHash3 parity vector (`hash-parity-vectors.json`).
public struct HashParityVector: Decodable, Sendable {
    public let description: String
    public let visitorId: String
    public let experienceId: String
    public let seed: UInt32
    /// The bucket value, `0...9999`.
    public let expectedValue: Int
    public let expectedVariationId: String?
    /// Variation id → percentage, walked in sorted order (every vector lists them sorted).
    public let buckets: [String: Double]
}

/// One cross-SDK bucketing case (`cross-sdk-bucketing-vectors.json`).
public struct BucketingVector: Decodable, Sendable {
    public struct Arm: Decodable, Sendable {
        public let id: String
        public let trafficAllocation: Double?
        public let status: String?

        enum CodingKeys: String, CodingKey {
            case id, status
            case trafficAllocation = "traffic_allocation"
        }
    }

    public let description: String
    public let experienceId: String
    public let visitorId: String
    public let version: Double
    public let variations: [Arm]
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
