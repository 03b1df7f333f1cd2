import ConvertEnvironment
import ConvertStorage
import ConvertVisitor
import Foundation

/// Reading the visitor files: the snapshot and the change logs.
///
/// A line is one visitor's whole record, `{"d":<data>,"k":"<store key>"}`, sealed with its
/// CRC-32 (see ``LineFormat``); the snapshot is such lines too, written atomically. Older
/// versions wrote unsealed lines and a snapshot that was one JSON object: both are still read
/// (unsealed lines only before the first sealed one) and rewritten at the next compaction.
enum VisitorFiles {
    /// What one file held.
    struct Contents {
        /// Records in file order (a later one replaces an earlier one for the same key).
        var records: [(key: VisitorKey, data: VisitorData)] = []
        /// Each record's mark: how much of the directory's ledger its writer had read (see
        /// ``DirectoryLedger``); 0 before the first `M` line.
        var marks: [UInt64] = []
        /// Complete lines that could not be used.
        var skipped = 0
        /// Lines in the format before checksums.
        var unsealed = 0
        /// Where a partial last line starts, if the file ends with one.
        var tornTailAt: Int?
        /// An old-format snapshot that could not be decoded.
        var unreadableSnapshot = false
    }

    /// A sealed `M <mark>` line: the records after it were written knowing the ledger up to `mark`.
    static func markLine(_ mark: UInt64) -> [UInt8] {
        var line = Array("M \(mark)".utf8)
        LineFormat.seal(&line)
        return line
    }

    /// The records in `contents` that no forget recorded in `ledger` since their mark erases.
    static func kept(_ contents: Contents, ledger: DirectoryLedger) -> [(key: VisitorKey, data: VisitorData)] {
        ledger.withForgets { isForgotten in
            zip(contents.records, contents.marks).compactMap { record, mark in
                isForgotten(record.key.storeKey, mark) ? nil : record
            }
        }
    }

    /// Records with their marks as lines, an `M` line before each change of mark.
    static func lines(_ records: [(key: VisitorKey, data: VisitorData)], marks: [UInt64]) -> [UInt8] {
        var out: [UInt8] = []
        var current: UInt64 = 0
        for (record, mark) in zip(records, marks) {
            if mark != current {
                out += markLine(mark)
                current = mark
            }
            out += line(key: record.key, data: record.data)
        }
        return out
    }

    /// Removes the records of `key` from the file at `url` (kept by a writer that is gone, whose
    /// lock the caller holds); `true` when there were some.
    static func erase(_ key: VisitorKey, from url: URL, isSnapshot: Bool = false) throws -> Bool {
        guard let bytes = try POSIXFile.readBytes(url) else { return false }
        let contents = parse(bytes, isSnapshot: isSnapshot)
        guard contents.records.contains(where: { $0.key == key }) else { return false }
        var records: [(key: VisitorKey, data: VisitorData)] = []
        var marks: [UInt64] = []
        for (record, mark) in zip(contents.records, contents.marks) where record.key != key {
            records.append(record)
            marks.append(mark)
        }
        try POSIXFile.atomicWrite(Data(lines(records, marks: marks)), to: url)
        return true
    }

    /// A sealed line for one record.
    static func line(key: VisitorKey, data: VisitorData) -> [UInt8] {
        var line = ChangeLine.encode(key: key.storeKey, data: data)
        LineFormat.seal(&line)
        return line
    }

    /// The records in a change log, or in a snapshot when `isSnapshot`.
    static func parse(_ bytes: [UInt8], isSnapshot: Bool = false) -> Contents {
        var contents = Contents()
        if isSnapshot, bytes.first == UInt8(ascii: "{"), !bytes.contains(UInt8(ascii: "\n")) {
            // A snapshot from before sealed lines: one JSON object, store key to record.
            if let snapshot = try? JSONDecoder().decode([String: VisitorData].self, from: Data(bytes)) {
                for (storeKey, data) in snapshot.sorted(by: { $0.key < $1.key }) {
                    if let key = VisitorKey(storeKey: storeKey) { contents.records.append((key, data)) } else { contents.skipped += 1 }
                }
                contents.unsealed = contents.records.count
                contents.marks = Array(repeating: 0, count: contents.records.count)
                return contents
            }
            if bytes.last == UInt8(ascii: "}") {
                contents.unreadableSnapshot = true
                return contents
            }
        }
        let decoder = JSONDecoder()
        let (lines, tornTailAt) = LineFormat.lines(bytes)
        contents.tornTailAt = tornTailAt
        var sealedSeen = false
        var mark: UInt64 = 0
        for line in lines {
            let sealed = LineFormat.unseal(line)
            if sealed != nil { sealedSeen = true }
            if let sealed, sealed.first == UInt8(ascii: "M") {
                let fields = LineFormat.fields(sealed)
                if fields.count == 2, fields[0].count == 1, let value = LineFormat.decimal(fields[1]) {
                    mark = value
                } else {
                    contents.skipped += 1
                }
                continue
            }
            guard let content = sealed ?? (sealedSeen || line.first != UInt8(ascii: "{") ? nil : line),
                  let record = ChangeLine.decode(content, decoder: decoder) else {
                contents.skipped += 1
                continue
            }
            if sealed == nil { contents.unsealed += 1 }
            contents.records.append(record)
            contents.marks.append(mark)
        }
        return contents
    }

    /// Adds what another writer recorded about a visitor to what is known: decisions already
    /// known stay (decisions are sticky), goals and locations are united, segments merged.
    static func merge(_ incoming: VisitorData, into existing: inout VisitorData) {
        guard !existing.isEmpty else {
            existing = incoming
            return
        }
        guard existing != incoming else { return }
        incoming.forEachDecision { experience, variation in
            if !existing.hasVariation(forExperience: experience) { existing.setVariation(variation, forExperience: experience) }
        }
        let goals = incoming.storedGoals
        if !goals.isSubset(of: existing.storedGoals) { existing.storedGoals.formUnion(goals) }
        let locations = incoming.locations
        if !locations.isSubset(of: existing.locations) { existing.locations.formUnion(locations) }
        if let segments = incoming.storedSegmentValues { existing.storeSegmentValues(segments) }
    }
}

/// The change log's write-behind buffer. Apart from the store so that a scheduled write keeps
/// only this alive: dropping the store still writes its pending lines at once.
///
/// It holds records, not lines: a visitor changed several times within one write-behind window
/// (context created, decided, converted) costs one line, encoded when the window closes.
final class ChangeWriter: @unchecked Sendable {
    // `pending`, `order` and `writeScheduled` are guarded by `lock` (the store's).
    let file: AppendFile
    private let lock: NSCondition
    private let log: SDKLog
    private var pending: [VisitorKey: VisitorData] = [:]
    private var order: [VisitorKey] = []
    private var writeScheduled = false
    /// The ledger mark of the records written now (see ``DirectoryLedger``), and the one the
    /// file last said; an `M` line goes before the next records when they differ.
    var mark: UInt64 = 0
    /// A file without `M` lines is at mark 0.
    private var writtenMark: UInt64 = 0
    private static let pendingLimit = 512

    init(file: AppendFile, lock: NSCondition, log: SDKLog) {
        self.file = file
        self.lock = lock
        self.log = log
    }

    /// Records `data` as the latest state of `key`; returns whether it adds a line (the key was
    /// not pending yet). Called under `lock`.
    @discardableResult
    func append(_ key: VisitorKey, _ data: VisitorData) -> Bool {
        let added = pending.updateValue(data, forKey: key) == nil
        if added { order.append(key) }
        if order.count >= Self.pendingLimit {
            writePending()
        } else if !writeScheduled {
            writeScheduled = true
            let delay = DispatchTimeInterval.milliseconds(FileVisitorDataStore.writeBehindMilliseconds)
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) {
                self.lock.withLock {
                    self.writeScheduled = false
                    self.writePending()
                }
            }
        }
        return added
    }

    /// Called under `lock`.
    func writePending() {
        guard !order.isEmpty else { return }
        var out: [UInt8] = []
        out.reserveCapacity(order.count * 128)
        let marking = writtenMark != mark
        if marking { out += VisitorFiles.markLine(mark) }
        for key in order {
            if let data = pending[key] { out += VisitorFiles.line(key: key, data: data) }
        }
        pending.removeAll(keepingCapacity: true)
        order.removeAll(keepingCapacity: true)
        do {
            try file.append(Data(out))
            if marking { writtenMark = mark }
        } catch {
            // The data stays in memory; the next compaction writes all of it.
            log.error("visitor data not persisted: \(error)")
        }
    }

    /// Replaces the whole log with `content` (what is pending is in it), whose records are at
    /// the current mark. Called under `lock`.
    func replaceAll(with content: Data = Data()) throws {
        pending.removeAll(keepingCapacity: true)
        order.removeAll(keepingCapacity: true)
        try file.replace(with: content)
        writtenMark = content.isEmpty ? 0 : mark
    }
}
