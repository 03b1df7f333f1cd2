/// Random (version 4) UUIDs as lowercase text, the form `UUID().uuidString.lowercased()` gives.
///
/// Foundation's `UUID()` opens, reads and closes `/dev/urandom` on every call on Linux (three
/// system calls, about 5 µs: a server's cost for each new visitor); the system generator here
/// is one `getrandom` call per 8 bytes.
package enum RandomUUID {
    /// A new random UUID, e.g. `"0b3e4c9a-7f21-4d6e-9a1c-5e8f2b7d4a10"`.
    package static func string() -> String {
        var generator = SystemRandomNumberGenerator()
        return string(high: generator.next(), low: generator.next())
    }

    /// The UUID whose first eight bytes are `high` and last eight `low` (big-endian), with the
    /// version (4) and variant (RFC 9562) bits set.
    package static func string(high: UInt64, low: UInt64) -> String {
        let high = (high & ~0xF000) | 0x4000
        let low = (low & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
        let digits: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: 36) { text in
            var at = 0
            func put(_ value: UInt64, nibbles: Int) {
                for shift in stride(from: (nibbles - 1) * 4, through: 0, by: -4) {
                    text[at] = digits.utf8Start[Int((value >> UInt64(shift)) & 0xF)]
                    at += 1
                }
            }
            func dash() {
                text[at] = UInt8(ascii: "-")
                at += 1
            }
            put(high >> 32, nibbles: 8)
            dash()
            put(high >> 16, nibbles: 4)
            dash()
            put(high, nibbles: 4)
            dash()
            put(low >> 48, nibbles: 4)
            dash()
            put(low, nibbles: 12)
            return at
        }
    }
}
