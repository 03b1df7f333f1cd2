import Foundation

/// The lines of an event journal file.
///
/// Current format, each line sealed with its CRC-32 (see ``LineFormat``):
/// `V <seq> <visitor hash> <mark> <base64 payload>` a record of one visitor's event (the
/// visitor's keyed hash and the ledger mark it was written at, see ``DirectoryLedger``),
/// `R <seq> <base64 payload>` a record of no known visitor, `K <seq>` an acknowledgement,
/// `F <file name>` a segment whose records this file already holds. The format before checksums (`E <seq>
/// <base64>`, `A <seq>`) is still read as long as no sealed line precedes it, so a journal left
/// by an older version is delivered once and then rewritten.
enum JournalFile {
    /// Whose event a record is, and how much of the ledger its writer had read.
    struct Tag: Hashable {
        var visitor: UInt64
        var mark: UInt64
    }

    /// One unacknowledged record.
    struct Record {
        var sequence: UInt64
        var payload: Data
        var tag: Tag?
    }

    struct Contents {
        /// Unacknowledged records in file order.
        var records: [Record] = []
        /// Names from `F` lines.
        var folded: [String] = []
        /// The largest sequence number read (records and acknowledgements).
        var maxSequence: UInt64 = 0
        /// Lines that could not be used, a torn last line included.
        var skipped = 0
    }

    static func record(_ sequence: UInt64, _ payload: Data, tag: Tag?, into out: inout [UInt8]) {
        let start = out.count
        if let tag {
            out += Array("V \(sequence) \(String(tag.visitor, radix: 16)) \(tag.mark) ".utf8)
        } else {
            out += Array("R \(sequence) ".utf8)
        }
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
        var records: [Record?] = []
        var sealedSeen = false
        let (lines, tornTail) = LineFormat.lines(bytes)
        if tornTail != nil { contents.skipped += 1 }

        func add(_ sequence: UInt64, _ payload: Data, _ tag: Tag? = nil) {
            live[sequence, default: []].append(records.count)
            records.append(Record(sequence: sequence, payload: payload, tag: tag))
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
            if sealed != nil, content.first == UInt8(ascii: "V") {
                let fields = LineFormat.fields(content, maxSplits: 4)
                guard fields.count == 5, fields[0].count == 1, let sequence = LineFormat.decimal(fields[1]),
                      fields[2].count <= 16, let visitor = UInt64(String(decoding: fields[2], as: UTF8.self), radix: 16),
                      let mark = LineFormat.decimal(fields[3]), let payload = Data(base64Encoded: Data(fields[4])) else {
                    contents.skipped += 1
                    continue
                }
                add(sequence, payload, Tag(visitor: visitor, mark: mark))
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
