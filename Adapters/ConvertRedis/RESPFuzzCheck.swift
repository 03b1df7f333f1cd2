/// What the RESP fuzz target checks with one input: the parser, fed the input whole and in
/// chunks of sizes the input itself chooses, must return the same replies and fail (or not) the
/// same way, within small limits, without trapping. The first byte seeds the chunk sizes.
package enum RESPFuzzCheck {
    package static let limits = RESPParser.Limits(maxBulkLength: 4_096, maxArrayLength: 256, maxDepth: 8,
                                                  maxLineLength: 1_024, maxReplyBytes: 64 * 1024, maxElements: 2_048)

    /// Runs the check; returns how many replies parsed (a trap is the failure).
    @discardableResult
    package static func run(_ input: [UInt8]) -> Int {
        guard let seed = input.first else { return 0 }
        let bytes = Array(input.dropFirst())
        let whole = parse(bytes, chunks: nil)
        var state = UInt64(seed) &+ 0x9E37_79B9_7F4A_7C15
        let chunked = parse(bytes) {
            // SplitMix64: chunk sizes from 1 to 64 bytes.
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % 64) + 1
        }
        precondition(whole.values == chunked.values && whole.failed == chunked.failed,
                     "chunking changed the parse: \(whole.values.count) vs \(chunked.values.count) replies")
        for value in whole.values { _ = value.summary }
        return whole.values.count
    }

    private static func parse(_ bytes: [UInt8], chunks: (() -> Int)?) -> (values: [RESPValue], failed: Bool) {
        var parser = RESPParser(limits: limits)
        var values: [RESPValue] = []
        var offset = 0
        repeat {
            let end = chunks.map { min(offset + $0(), bytes.count) } ?? bytes.count
            parser.append(bytes[offset..<end])
            offset = end
            do {
                while let value = try parser.next() { values.append(value) }
            } catch {
                _ = error.description
                return (values, true)
            }
        } while offset < bytes.count
        return (values, false)
    }
}
