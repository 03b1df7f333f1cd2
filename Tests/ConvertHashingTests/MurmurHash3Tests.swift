import ConvertHashing
import ConvertTesting
import Foundation
import Testing

@Suite struct MurmurHash3Tests {
    @Test func publishedReferenceValues() {
        #expect(MurmurHash3.hash32("", seed: 0) == 0)
        #expect(MurmurHash3.hash32("", seed: 1) == 0x514E_28B7)
        #expect(MurmurHash3.hash32("", seed: 0xFFFF_FFFF) == 0x81F1_6F39)
        #expect(MurmurHash3.hash32("hello", seed: 0) == 0x248B_FA47)
        #expect(MurmurHash3.hash32("Hello, world!", seed: 1234) == 0xFAF6_CDB3)
        #expect(MurmurHash3.hash32("The quick brown fox jumps over the lazy dog", seed: 0) == 0x2E4F_F723)
    }

    @Test func everyParityVectorScalesToItsBucketValue() throws {
        let vectors = try Fixtures.hashParityVectors()
        #expect(vectors.count == 74)
        for v in vectors {
            let hash = MurmurHash3.hash32(v.experienceId + v.visitorId, seed: v.seed)
            let value = Int(Double(hash) / 4_294_967_296.0 * 10_000.0)
            #expect(value == v.expectedValue, "\(v.description)")
        }
    }

    @Test func twoPartHashEqualsHashOfConcatenation() throws {
        let vectors = try Fixtures.hashParityVectors()
        for v in vectors {
            #expect(MurmurHash3.hash32(v.experienceId, v.visitorId, seed: v.seed)
                    == MurmurHash3.hash32(v.experienceId + v.visitorId, seed: v.seed), "\(v.description)")
        }
    }

    @Test func incrementalFeedingMatchesWholeInputAtEverySplit() {
        let text = "naïve-visitor-🚀-Ωmega-1234567"
        let bytes = Array(text.utf8)
        let whole = MurmurHash3.hash32(text, seed: 42)
        for split in 0...bytes.count {
            var state = MurmurHash3State(seed: 42)
            bytes[..<split].withUnsafeBytes { state.combine(buffer: $0) }
            state.combine(bytes: bytes[split...])
            #expect(state.finalize() == whole, "split at \(split)")
        }
        #expect(MurmurHash3.hash32(bytes: bytes, seed: 42) == whole)
    }

    @Test func unicodeHashesItsUTF8Bytes() {
        let text = "日本語-visitor"
        #expect(MurmurHash3.hash32(text) == MurmurHash3.hash32(bytes: Array(text.utf8)))
        #expect(MurmurHash3.hash32("é") != MurmurHash3.hash32("e\u{301}"))
    }

    @Test func seedChangesTheHash() {
        #expect(MurmurHash3.hash32("visitor", seed: 1) != MurmurHash3.hash32("visitor", seed: 2))
        #expect(MurmurHash3.defaultSeed == 9999)
        #expect(MurmurHash3.hash32("visitor") == MurmurHash3.hash32("visitor", seed: 9999))
    }
}
