import ConvertHashing
import ConvertStorage
import ConvertSynchronization
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What every process on one storage directory must honour, whoever wrote it: visitors
/// forgotten, and manual exposures already sent.
///
/// One append-only file, `directory.ledger`, of sealed lines (see ``LineFormat``):
/// `S <seed> <seed>` first, then `X <hash>` for a forgotten visitor and `E <hash>` for an
/// exposure recorded once. Only keyed hashes are written, never a visitor id: the seeds are
/// random per directory, so nobody outside it can make one visitor's hash equal another's.
/// Appends are made under an advisory lock on `directory.ledger.lock`, held for one read and
/// one write, so a check and the append that follows it are atomic across processes.
///
/// Files that hold visitor records (the change logs, the snapshot, the event journals) say how
/// much of the ledger their writer had read when it wrote the records after it: an `M <offset>`
/// line. A forget at an offset at or past a record's mark was not yet known when the record was
/// written, so it erases that record; one before it was, so the record is the visitor's new
/// data, written after the forget.
final class DirectoryLedger: @unchecked Sendable {
    // Every mutable field is guarded by `lock`.
    private let lock = NSLock()
    private let url: URL
    private let lockURL: URL
    private var seeds: (UInt32, UInt32)?
    /// Bytes of complete lines read.
    private var offset: UInt64 = 0
    /// Each forgotten hash with the offset of its latest forget line.
    private var forgets: [UInt64: UInt64] = [:]
    /// Each exposure hash with the offset of its line.
    private var exposures: [UInt64: UInt64] = [:]
    /// How often a visitor store reads the ledger on its calls: a forget made elsewhere is
    /// honoured on the next call after this time, and at once before a compaction or a send.
    static let refreshInterval = Duration.milliseconds(100)

    private init(directory: URL) {
        url = directory.appendingPathComponent("directory.ledger")
        lockURL = directory.appendingPathComponent("directory.ledger.lock")
    }

    /// The ledger of `directory`, one per directory in a process.
    static func shared(directory: URL) -> DirectoryLedger {
        let key = directory.resolvingSymlinksInPath().path
        return Self.table.withValue { table in
            if let ledger = table[key]?.ledger { return ledger }
            table = table.filter { $0.value.ledger != nil }
            let ledger = DirectoryLedger(directory: directory)
            table[key] = Entry(ledger: ledger)
            return ledger
        }
    }

    private struct Entry {
        weak var ledger: DirectoryLedger?
    }
    private static let table = Locked<[String: Entry]>([:])

    /// How much of the ledger has been read: the mark for records written now.
    var mark: UInt64 {
        lock.withLock { offset }
    }

    /// Reads what other processes appended since the last read; returns the mark.
    @discardableResult
    func refresh() -> UInt64 {
        lock.withLock {
            readNew()
            return offset
        }
    }

    /// The hashes of visitors forgotten at or past `mark` (see ``hash(_:)``).
    func forgotten(since mark: UInt64) -> Set<UInt64> {
        lock.withLock { Set(forgets.filter { $0.value >= mark }.keys) }
    }

    /// The hash of a visitor's key, as ``forgotten(since:)`` lists it; `nil` before anything
    /// was recorded (nothing was forgotten then).
    func hasher() -> (@Sendable (VisitorKey) -> UInt64)? {
        lock.withLock {
            guard let seeds else { return nil }
            return { key in Self.hash(key.storeKey, seeds) }
        }
    }

    /// Every forgotten hash with the offset of its latest forget.
    func forgetOffsets(since mark: UInt64 = 0) -> [UInt64: UInt64] {
        lock.withLock { mark == 0 ? forgets : forgets.filter { $0.value >= mark } }
    }

    /// Makes sure the directory's seeds exist, so records can be tagged with their visitor.
    func ensureSeeds() throws {
        if lock.withLock({ seeds != nil }) { return }
        _ = try appending { _ in nil }
    }

    /// Calls `body` with a function that tells whether a record of the visitor with the store
    /// key given, written at the mark given, was forgotten since (one lock for many records).
    func withForgets<Result>(_ body: ((String, UInt64) -> Bool) -> Result) -> Result {
        lock.withLock {
            guard let seeds, !forgets.isEmpty else { return body { _, _ in false } }
            return body { storeKey, mark in
                self.forgets[Self.hash(storeKey, seeds)].map { $0 >= mark } ?? false
            }
        }
    }

    /// Records that the visitor is forgotten; returns the mark past the record.
    @discardableResult
    func recordForget(_ key: VisitorKey) throws -> UInt64 {
        try appending { seeds in
            let hash = Self.hash(key.storeKey, seeds)
            return ("X", hash)
        } ?? offset
    }

    /// Records the exposure `marker` of the visitor unless some process recorded it first;
    /// `true` when this call recorded it.
    func claimOnce(_ key: VisitorKey, marker: String) throws -> Bool {
        var claimed = false
        _ = try appending { seeds in
            let hash = Self.hash(key.storeKey + "\u{0}" + marker, seeds)
            // Claimed before and not forgotten since: sent already. A visitor forgotten after
            // the claim is new to the project again, and so is its exposure.
            if let claimedAt = exposures[hash], claimedAt > forgets[Self.hash(key.storeKey, seeds), default: 0] {
                return nil
            }
            claimed = true
            return ("E", hash)
        }
        return claimed
    }

    /// Under the cross-process lock: reads what is new, then appends the line `entry` returns
    /// (none for `nil`); returns the mark past it.
    private func appending(_ entry: ((UInt32, UInt32)) throws -> (tag: Character, hash: UInt64)?) throws -> UInt64? {
        try lock.withLock {
            let fd = open(lockURL.path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, POSIXFile.ownerOnly)
            guard fd >= 0 else { throw POSIXFile.failure("open", lockURL.path) }
            defer { close(fd) }
            try POSIXFile.requireRegularFile(fd, lockURL.path)
            while flock(fd, LOCK_EX) != 0 {
                guard errno == EINTR else { throw POSIXFile.failure("lock", lockURL.path) }
            }
            readNew()
            var out: [UInt8] = []
            if seeds == nil {
                let made = (UInt32.random(in: 1...UInt32.max), UInt32.random(in: 1...UInt32.max))
                let start = out.count
                out += Array("S \(made.0) \(made.1)".utf8)
                LineFormat.seal(&out, from: start)
                seeds = made
            }
            guard let seeds else { return nil }
            guard let line = try entry(seeds) else {
                if !out.isEmpty { try write(out) }
                return offset
            }
            let start = out.count
            out += Array("\(line.tag) \(String(line.hash, radix: 16))".utf8)
            LineFormat.seal(&out, from: start)
            try write(out)
            return offset
        }
    }

    /// Appends `bytes` (whole lines) and reads them back as everything else. Called under
    /// `lock` and the file lock, after ``readNew()``.
    private func write(_ bytes: [UInt8]) throws {
        let fd = try POSIXFile.openForAppend(url)
        defer { close(fd) }
        try POSIXFile.writeAll(fd, Data(bytes), path: url.path)
        readNew()
    }

    /// Reads complete lines past `offset`. Called under `lock`.
    private func readNew() {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return }
        let size = UInt64(info.st_size)
        if size < offset {
            // Replaced by a shorter file (removed by hand): read it whole again.
            offset = 0
            seeds = nil
            forgets.removeAll()
            exposures.removeAll()
        }
        guard size > offset else { return }
        var bytes = [UInt8](repeating: 0, count: Int(size - offset))
        let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(offset)) }
        guard count > 0 else { return }
        bytes.removeSubrange(count..<bytes.count)
        var lineStart = 0
        for (index, byte) in bytes.enumerated() where byte == UInt8(ascii: "\n") {
            apply(bytes[lineStart..<index], at: offset + UInt64(lineStart))
            lineStart = index + 1
        }
        offset += UInt64(lineStart)
    }

    private func apply(_ line: ArraySlice<UInt8>, at lineOffset: UInt64) {
        guard let content = LineFormat.unseal(line) else { return }
        let fields = LineFormat.fields(content)
        guard fields.count >= 2, fields[0].count == 1 else { return }
        switch fields[0].first {
        case UInt8(ascii: "S"):
            guard seeds == nil, fields.count == 3, let a = LineFormat.decimal(fields[1]), let b = LineFormat.decimal(fields[2]),
                  let first = UInt32(exactly: a), let second = UInt32(exactly: b) else { return }
            seeds = (first, second)
        case UInt8(ascii: "X"):
            guard let hash = UInt64(String(decoding: fields[1], as: UTF8.self), radix: 16) else { return }
            forgets[hash] = lineOffset
        case UInt8(ascii: "E"):
            guard let hash = UInt64(String(decoding: fields[1], as: UTF8.self), radix: 16) else { return }
            exposures[hash] = lineOffset
        default:
            return
        }
    }

    private static func hash(_ text: String, _ seeds: (UInt32, UInt32)) -> UInt64 {
        UInt64(MurmurHash3.hash32(text, seed: seeds.0)) << 32 | UInt64(MurmurHash3.hash32(text, seed: seeds.1))
    }
}
