import ConvertStorage
import ConvertSupport
import Foundation

/// Visitor data held in memory and persisted as a snapshot plus an append-only change log:
/// each write appends one line (O(1) amortized); the log is folded into a new snapshot when it
/// grows past twice the number of visitors. Survives restarts; a corrupt snapshot is moved
/// aside and logged.
public final class FileVisitorDataStore: VisitorDataStore, @unchecked Sendable {
    // `records`, `logLines` and `unflushed` are guarded by `lock`.
    private let lock = NSLock()
    private var records = VisitorTable()
    private var logLines = 0
    private var unflushed = 0
    private let snapshotURL: URL
    private let changes: AppendFile
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
        changes = try AppendFile(logURL)
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
            try changes.append(Data(line))
            logLines += 1
            unflushed += 1
            if logLines > max(1024, 2 * records.count) { try compact() }
        } catch {
            log.error("visitor data not persisted: \(error)")
        }
    }

    /// Called under `lock`.
    private func compact() throws {
        var snapshot: [String: VisitorData] = [:]
        snapshot.reserveCapacity(records.count)
        records.forEach { key, data in snapshot[key.storeKey] = data }
        try POSIXFile.atomicWrite(try encoder.encode(snapshot), to: snapshotURL)
        try changes.replace(with: Data())
        logLines = 0
    }

    public func flush() async -> Int {
        lock.withLock {
            changes.sync()
            defer { unflushed = 0 }
            return unflushed
        }
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
