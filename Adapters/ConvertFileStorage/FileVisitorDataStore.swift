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
    private var records: [String: VisitorData] = [:]
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
        var records: [String: VisitorData] = [:]
        if let data = try POSIXFile.read(snapshotURL) {
            if let snapshot = try? decoder.decode([String: VisitorData].self, from: data) {
                records = snapshot
            } else {
                let moved = POSIXFile.quarantine(snapshotURL)
                log.error("visitor snapshot is corrupt; moved aside to \(moved)")
            }
        }
        var skipped = 0
        var lines = 0
        if let data = try POSIXFile.read(logURL) {
            for line in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
                if let entry = try? decoder.decode(Entry.self, from: Data(line)) {
                    records[entry.k] = entry.d
                    lines += 1
                } else {
                    skipped += 1
                }
            }
        }
        if skipped > 0 { log.warn("visitor change log: skipped \(skipped) unreadable line(s)") }
        self.records = records
        changes = try AppendFile(logURL)
        logLines = lines
        encoder.outputFormatting = [.sortedKeys]
    }

    /// The number of visitors held.
    public var count: Int { lock.withLock { records.count } }

    public func data(for key: String) -> VisitorData? {
        lock.withLock { records[key] }
    }

    public func update<Result>(_ key: String, _ body: (inout VisitorData) -> Result) -> Result {
        lock.withLock {
            let existing = records[key]
            var data = existing ?? VisitorData()
            let result = body(&data)
            guard data != existing, existing != nil || !data.isEmpty else { return result }
            records[key] = data
            persist(Entry(k: key, d: data))
            return result
        }
    }

    /// Called under `lock`.
    private func persist(_ entry: Entry) {
        do {
            var line = try encoder.encode(entry)
            line.append(UInt8(ascii: "\n"))
            try changes.append(line)
            logLines += 1
            unflushed += 1
            if logLines > max(1024, 2 * records.count) { try compact() }
        } catch {
            log.error("visitor data not persisted: \(error)")
        }
    }

    /// Called under `lock`.
    private func compact() throws {
        try POSIXFile.atomicWrite(try encoder.encode(records), to: snapshotURL)
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
