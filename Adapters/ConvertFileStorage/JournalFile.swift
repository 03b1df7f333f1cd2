import Foundation

/// The lines of an event journal file.
///
/// Current format, each line sealed with its CRC-32 (see ``LineFormat``):
/// `R <seq> <base64 payload>` a record, `K <seq>` its acknowledgement, `F <file name>` a
/// segment whose records this file already holds. The format before checksums (`E <seq>
/// <base64>`, `A <seq>`) is still read as long as no sealed line precedes it, so a journal left
/// by an older version is delivered once and then rewritten.
enum JournalFile {
    struct Contents {
        /// Unacknowledged records in file order.
        var records: [(sequence: UInt64, payload: Data)] = []
        /// Names from `F` lines.
        var folded: [String] = []
        /// The largest sequence number read (records and acknowledgements).
        var maxSequence: UInt64 = 0
        /// Lines that could not be used, a torn last line included.
        var skipped = 0
    }

    static func record(_ sequence: UInt64, _ payload: Data, into out: inout [UInt8]) {
        let start = out.count
        out += Array("R \(sequence) ".utf8)
        out += Array(payload.base64EncodedData())
        LineFormat.seal(&out, from: start)
    }

    static func acknowledgement(_ sequence: UInt64, into out: inout [UInt8]) {
        let start = out.count
        out += Array("K \(sequence)".utf8)
        LineFormat.seal(&out, from: start)
    }

    static func fold(_ name: String, into out: inout [UInt8]) {
        let start = out.count
        out += Array("F \(name)".utf8)
        LineFormat.seal(&out, from: start)
    }

    /// The contents of the journal at `url`, `nil` when there is no file.
    static func read(_ url: URL) throws -> Contents? {
        guard let bytes = try POSIXFile.readBytes(url) else { return nil }
        return parse(bytes)
    }

    static func parse(_ bytes: [UInt8]) -> Contents {
        var contents = Contents()
        var live: [UInt64: [Int]] = [:]
        var records: [(sequence: UInt64, payload: Data)?] = []
        var sealedSeen = false
        let (lines, tornTail) = LineFormat.lines(bytes)
        if tornTail != nil { contents.skipped += 1 }

        func add(_ sequence: UInt64, _ payload: Data) {
            live[sequence, default: []].append(records.count)
            records.append((sequence, payload))
            contents.maxSequence = max(contents.maxSequence, sequence)
        }
        func acknowledge(_ sequence: UInt64) {
            contents.maxSequence = max(contents.maxSequence, sequence)
            // Files from before the lock could hold one number twice; each acknowledgement
            // then retires the oldest record still holding it.
            guard var indexes = live[sequence], !indexes.isEmpty else { return }
            records[indexes.removeFirst()] = nil
            live[sequence] = indexes.isEmpty ? nil : indexes
        }

        for line in lines {
            let sealed = LineFormat.unseal(line)
            if sealed != nil { sealedSeen = true }
            // Unsealed lines are the old format, read only before the first sealed line.
            guard let content = sealed ?? (sealedSeen ? nil : line) else {
                contents.skipped += 1
                continue
            }
            let fields = LineFormat.fields(content, maxSplits: 2)
            let tag = fields[0].count == 1 ? fields[0].first! : 0
            switch (sealed != nil, tag, fields.count) {
            case (true, UInt8(ascii: "R"), 3), (false, UInt8(ascii: "E"), 3):
                guard let sequence = LineFormat.decimal(fields[1]), let payload = Data(base64Encoded: Data(fields[2])) else {
                    contents.skipped += 1
                    continue
                }
                add(sequence, payload)
            case (true, UInt8(ascii: "K"), 2), (false, UInt8(ascii: "A"), 2):
                guard let sequence = LineFormat.decimal(fields[1]) else {
                    contents.skipped += 1
                    continue
                }
                acknowledge(sequence)
            case (true, UInt8(ascii: "F"), 2):
                contents.folded.append(String(decoding: fields[1], as: UTF8.self))
            default:
                contents.skipped += 1
            }
        }
        contents.records = records.compactMap { $0 }
        return contents
    }
}
