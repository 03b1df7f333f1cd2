/// A Lua script run by its SHA-1 (`EVALSHA`), sent whole (`EVAL`) only when the server does not
/// have it cached (`NOSCRIPT`: a restarted server, `SCRIPT FLUSH`), which caches it again.
///
/// ```swift
/// let script = RedisScript("return redis.call('HGET', KEYS[1], ARGV[1])")
/// let value = try await client.run(script, keys: ["visitor:1"], args: ["d:e1"])
/// ```
package struct RedisScript: Sendable, Hashable {
    /// The Lua source.
    package let source: String
    /// The SHA-1 of the source in lower-case hex, as Redis names cached scripts.
    package let sha1: String

    /// A script of `source`.
    package init(_ source: String) {
        self.source = source
        sha1 = SHA1.hex(Array(source.utf8))
    }
}

extension RedisCommand {
    /// `EVALSHA sha1 numkeys key… arg…`; the keys get the prefix.
    package static func evalsha(_ script: RedisScript, keys: [String], args: [RedisArgument]) -> RedisCommand {
        RedisCommand(["EVALSHA", .string(script.sha1), .integer(keys.count)] + keys.map { .key($0) } + args)
    }
}

extension RESPValue {
    /// Whether this is the error a server answers `EVALSHA` with when it lacks the script.
    var isNoScript: Bool { errorMessage?.hasPrefix("NOSCRIPT") == true }
}

/// SHA-1 (FIPS 180-4), for script names only: Redis identifies cached scripts by it.
enum SHA1 {
    static func hex(_ message: [UInt8]) -> String {
        var h: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0)
        var bytes = message
        let bitLength = UInt64(message.count) &* 8
        bytes.append(0x80)
        while bytes.count % 64 != 56 { bytes.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }
        var w = [UInt32](repeating: 0, count: 80)
        for block in stride(from: 0, to: bytes.count, by: 64) {
            for i in 0..<16 {
                let j = block + i * 4
                w[i] = UInt32(bytes[j]) << 24 | UInt32(bytes[j + 1]) << 16 | UInt32(bytes[j + 2]) << 8 | UInt32(bytes[j + 3])
            }
            for i in 16..<80 {
                let x = w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]
                w[i] = x << 1 | x >> 31
            }
            var (a, b, c, d, e) = h
            for i in 0..<80 {
                let f: UInt32, k: UInt32
                switch i {
                case 0..<20: (f, k) = ((b & c) | (~b & d), 0x5A82_7999)
                case 20..<40: (f, k) = (b ^ c ^ d, 0x6ED9_EBA1)
                case 40..<60: (f, k) = ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC)
                default: (f, k) = (b ^ c ^ d, 0xCA62_C1D6)
                }
                let temp = (a << 5 | a >> 27) &+ f &+ e &+ k &+ w[i]
                e = d
                d = c
                c = b << 30 | b >> 2
                b = a
                a = temp
            }
            h = (h.0 &+ a, h.1 &+ b, h.2 &+ c, h.3 &+ d, h.4 &+ e)
        }
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(40)
        for word in [h.0, h.1, h.2, h.3, h.4] {
            for shift in stride(from: 28, through: 0, by: -4) { out.append(digits[Int(word >> UInt32(shift) & 0xF)]) }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
