import ConvertStorage
import ConvertSupport
import Foundation

/// Visitor data held in memory and persisted as a snapshot plus an append-only change log:
/// each change appends one line (O(1) amortized); the log is folded into a new snapshot when it
/// grows past twice the number of visitors. Survives restarts; a corrupt snapshot is moved
/// aside and logged.
///
/// Lines are written behind the decision: they reach the file within
/// ``writeBehindMilliseconds`` (sooner when 64 KiB are pending, at once on `flush()`), so a
/// crash can lose at most that window of sticky decisions — never a tracking event, which the
/// event journal keeps.
public final class FileVisitorDataStore: VisitorDataStore, @unchecked Sendable {
    // `records`, `logLines`, `unflushed` and the writer's state are guarded by `lock`.
    private let lock: NSLock
    private var records = VisitorTable()
    private var logLines = 0
    private var unflushed = 0

    /// The longest a change waits in memory before it is written.
    public static let writeBehindMilliseconds = 50
    private let snapshotURL: URL
    private let writer: ChangeWriter
    private let log: SDKLog
    private let encoder = JSONEncoder()

    private struct Entry: Codable {
        let k: String
        let d: VisitorData
    }

    /// Opens (or creates) the store in `directory`.
    public init(directory: URL, log: SDKLog = .silent) throws {
        try POSIXFile.ensureDirectory(directory)
        self.log = log
        snapshotURL = directory.appendingPathComponent("visitors.snapshot")
        let logURL = directory.appendingPathComponent("visitors.log")
        let decoder = JSONDecoder()
        var records = VisitorTable()
        var skipped = 0
        if let data = try POSIXFile.read(snapshotURL) {
            if let snapshot = try? decoder.decode([String: VisitorData].self, from: data) {
                for (storeKey, record) in snapshot {
                    if let key = VisitorKey(storeKey: storeKey) { records.set(record, for: key) } else { skipped += 1 }
                }
            } else {
                let moved = POSIXFile.quarantine(snapshotURL)
                log.error("visitor snapshot is corrupt; moved aside to \(moved)")
            }
        }
        var lines = 0
        if let data = try POSIXFile.read(logURL) {
            for line in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
                if let entry = try? decoder.decode(Entry.self, from: Data(line)), let key = VisitorKey(storeKey: entry.k) {
                    records.set(entry.d, for: key)
                    lines += 1
                } else {
                    skipped += 1
                }
            }
        }
        if skipped > 0 { log.warn("visitor store: skipped \(skipped) unreadable record(s)") }
        self.records = records
        let lock = NSLock()
        self.lock = lock
        writer = ChangeWriter(file: try AppendFile(logURL), lock: lock, log: log)
        logLines = lines
        encoder.outputFormatting = [.sortedKeys]
    }

    /// The number of visitors held.
    public var count: Int { lock.withLock { records.count } }

    public func data(for key: VisitorKey) -> VisitorData? {
        lock.withLock { records.peek(key) }
    }

    public func update<Result>(_ key: VisitorKey, _ body: (inout VisitorData) -> Result) -> Result {
        lock.withLock {
            var before: VisitorData?
            var after = VisitorData()
            let result = records.modify(key) { data -> Result in
                before = data
                let result = body(&data)
                after = data
                return result
            }
            guard after != before else { return result }
            persist(key, after)
            return result
        }
    }

    /// Called under `lock`.
    private func persist(_ key: VisitorKey, _ data: VisitorData) {
        do {
            var line = ChangeLine.encode(key: key.storeKey, data: data)
            line.append(UInt8(ascii: "\n"))
            logLines += 1
            unflushed += 1
            if logLines > max(1024, 2 * records.count) {
                try compact()
            } else {
                writer.append(line)
            }
        } catch {
            log.error("visitor data not persisted: \(error)")
        }
    }

    deinit {
        lock.withLock { writer.writePending() }
    }

    /// Called under `lock`.
    private func compact() throws {
        var snapshot: [String: VisitorData] = [:]
        snapshot.reserveCapacity(records.count)
        records.forEach { key, data in snapshot[key.storeKey] = data }
        try POSIXFile.atomicWrite(try encoder.encode(snapshot), to: snapshotURL)
        try writer.replaceAll()
        logLines = 0
    }

    public func flush() async -> Int {
        lock.withLock {
            writer.writePending()
            writer.file.sync()
            defer { unflushed = 0 }
            return unflushed
        }
    }
}

/// The change log's write-behind buffer. Apart from the store so that a scheduled write keeps
/// only this alive: dropping the store still writes its pending lines at once.
private final class ChangeWriter: @unchecked Sendable {
    // `pending` and `writeScheduled` are guarded by `lock` (the store's).
    let file: AppendFile
    private let lock: NSLock
    private let log: SDKLog
    private var pending: [UInt8] = []
    private var writeScheduled = false
    private static let pendingLimit = 64 * 1024

    init(file: AppendFile, lock: NSLock, log: SDKLog) {
        self.file = file
        self.lock = lock
        self.log = log
    }

    /// Called under `lock`.
    func append(_ line: [UInt8]) {
        pending += line
        if pending.count >= Self.pendingLimit {
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
    }

    /// Called under `lock`.
    func writePending() {
        guard !pending.isEmpty else { return }
        do {
            try file.append(Data(pending))
        } catch {
            // The data stays in memory; the next compaction writes all of it.
            log.error("visitor data not persisted: \(error)")
        }
        pending.removeAll(keepingCapacity: true)
    }

    /// Empties the log (its content is in a new snapshot). Called under `lock`.
    func replaceAll() throws {
        pending.removeAll(keepingCapacity: true)
        try file.replace(with: Data())
    }
}

/// Writes one change-log line by hand: the same JSON `JSONEncoder` would produce for an entry,
/// at a fraction of the cost on the decision path.
enum ChangeLine {
    static func encode(key: String, data: VisitorData) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(96 + key.utf8.count)
        out += Array(#"{"d":{"bucketing":{"#.utf8)
        var first = true
        for (experience, variation) in data.bucketing {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            string(experience, &out)
            out.append(UInt8(ascii: ":"))
            string(variation, &out)
        }
        out += Array(#"},"goals":"#.utf8)
        list(data.goals, &out)
        out += Array(#","locations":"#.utf8)
        list(data.locations, &out)
        out += Array(#","segments":"#.utf8)
        let segments = data.segments
        if segments.isEmpty {
            out += Array("{}".utf8)
        } else {
            out += (try? JSONEncoder().encode(segments)).map(Array.init) ?? Array("{}".utf8)
        }
        out += Array(#"},"k":"#.utf8)
        string(key, &out)
        out.append(UInt8(ascii: "}"))
        return out
    }

    private static func list(_ values: Set<String>, _ out: inout [UInt8]) {
        out.append(UInt8(ascii: "["))
        var first = true
        for value in values {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            string(value, &out)
        }
        out.append(UInt8(ascii: "]"))
    }

    private static func string(_ text: String, _ out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out += [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                        hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
