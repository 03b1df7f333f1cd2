import Foundation

/// Checksummed text lines, shared by the event journal and the visitor files.
///
/// A line is `<content> <crc>`: `crc` is the CRC-32 (IEEE, as zlib computes it) of the content
/// bytes, as eight lowercase hex digits. A line whose checksum does not match is never used.
/// Numbers are parsed here without traps: overflow and garbage read as `nil`.
enum LineFormat {
    private static let table: [UInt32] = (0..<256).map { n -> UInt32 in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    /// The CRC-32 of `bytes`.
    static func crc32<Bytes: Collection>(_ bytes: Bytes) -> UInt32 where Bytes.Element == UInt8 {
        var crc: UInt32 = 0xFFFF_FFFF
        table.withUnsafeBufferPointer { table in
            for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        }
        return crc ^ 0xFFFF_FFFF
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Appends ` <crc of content>\n` to `line`, whose bytes from `start` are the content.
    static func seal(_ line: inout [UInt8], from start: Int = 0) {
        let crc = line.withUnsafeBufferPointer { crc32($0[start...]) }
        line.append(UInt8(ascii: " "))
        for shift in stride(from: 28, through: 0, by: -4) { line.append(hexDigits[Int((crc >> UInt32(shift)) & 0xF)]) }
        line.append(UInt8(ascii: "\n"))
    }

    /// The content of a sealed line (without its newline), or `nil` when the checksum is missing
    /// or does not match.
    static func unseal(_ line: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        guard line.count >= 10 else { return nil }
        let separator = line.index(line.endIndex, offsetBy: -9)
        guard line[separator] == UInt8(ascii: " "), let stored = hex32(line[(separator + 1)...]) else { return nil }
        let content = line[..<separator]
        return crc32(content) == stored ? content : nil
    }

    private static func hex32(_ digits: ArraySlice<UInt8>) -> UInt32? {
        guard digits.count == 8 else { return nil }
        var value: UInt32 = 0
        for byte in digits {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    /// A decimal `UInt64` (digits only, at most 20), or `nil` for anything else, overflow included.
    static func decimal(_ digits: ArraySlice<UInt8>) -> UInt64? {
        guard !digits.isEmpty, digits.count <= 20 else { return nil }
        var value: UInt64 = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = shifted.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            if overflow1 || overflow2 { return nil }
            value = sum
        }
        return value
    }

    /// The complete lines of `bytes` (each without its newline) and whether the text ends with a
    /// partial line (a write cut short), which is not included.
    static func lines(_ bytes: [UInt8]) -> (lines: [ArraySlice<UInt8>], tornTailAt: Int?) {
        var out: [ArraySlice<UInt8>] = []
        var start = 0
        var i = 0
        bytes.withUnsafeBufferPointer { buffer in
            while i < buffer.count {
                if buffer[i] == UInt8(ascii: "\n") {
                    if i > start { out.append(bytes[start..<i]) }
                    start = i + 1
                }
                i += 1
            }
        }
        return (out, start < bytes.count ? start : nil)
    }

    /// Splits `line` at single spaces.
    static func fields(_ line: ArraySlice<UInt8>, maxSplits: Int = Int.max) -> [ArraySlice<UInt8>] {
        line.split(separator: UInt8(ascii: " "), maxSplits: maxSplits, omittingEmptySubsequences: false)
    }
}
