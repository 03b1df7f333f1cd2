import ConvertEnvironment
import ConvertStorage
import ConvertVisitorTable
import Foundation

/// Visitor data held in memory, bounded, and persisted as a snapshot plus append-only change
/// logs: each change appends one checksummed line (O(1) amortized); a log is folded into a
/// new snapshot when it grows past twice the number of visitors. Survives restarts; a corrupt
/// snapshot is moved aside and logged, unreadable lines are skipped and counted in one log line.
///
/// At most `capacity` visitors are kept; past that one not used lately is forgotten (clock
/// eviction, see ``VisitorTable``), and a compaction writes only the visitors kept, so the
/// files stay bounded too.
///
/// The files are read on a background thread: `init` returns at once, ``prepare()`` waits for
/// the load, and a call that arrives earlier waits for it too (so it never reads stale data or
/// overwrites newer data with it).
///
/// Several processes: the process holding the advisory lock (`flock`) on `visitors.log.lock`
/// owns `visitors.log` and the snapshot; every other process appends to its own
/// `visitors.log.w-<token>`, holding `visitors.log.w-<token>.lock`, and rewrites only that file
/// when it compacts. Every process reads all of them when it opens; records of different
/// writers are merged (decisions already known stay, goals and locations are united). The
/// files of a writer whose lock is free are folded into the opener's own files and deleted.
///
/// Lines are written behind the decision: they reach the file within
/// ``writeBehindMilliseconds`` (sooner when 64 KiB are pending, at once on `flush()`), so a
/// crash can lose at most that window of sticky decisions — never a tracking event, which the
/// event journal keeps.
public final class FileVisitorDataStore: VisitorDataStore, @unchecked Sendable {
    // Every mutable field is guarded by `lock` (the change writer's state and `loading` too).
    private let lock = NSCondition()
    private var records: VisitorTable
    private let loading = LoadState()
    private var logLines = 0
    private var unflushed = 0
    private var logHasData = false

    /// The longest a change waits in memory before it is written.
    package static let writeBehindMilliseconds = 50
    /// The default number of visitors kept.
    public static let defaultCapacity = 10_000
    /// The most visitors kept.
    public let capacity: Int
    private let files: WriterFiles
    /// `nil` for the owner of `visitors.log`.
    private let token: String?
    private let roleLock: FileLock
    private let snapshotURL: URL
    private let writer: ChangeWriter
    private let log: SDKLog
    private let ledger: DirectoryLedger
    /// How much of the ledger this store has honoured: every visitor forgotten before it is
    /// gone from `records` and from the files this store writes.
    private var appliedMark: UInt64 = 0
    private var nextLedgerRead: ContinuousClock.Instant?
    private let loadEnding: (@Sendable () -> Void)?

    /// Opens (or creates) the store in `directory`, keeping at most `capacity` visitors; the
    /// stored visitors are read in the background (see ``prepare()``).
    public convenience init(directory: URL, capacity: Int = FileVisitorDataStore.defaultCapacity, log: SDKLog = .silent) throws {
        try self.init(directory: directory, capacity: capacity, log: log, loadEnding: nil)
    }

    /// `loadEnding` runs on the loader thread as its last step while it still holds the store
    /// (tests pause the thread there).
    package init(directory: URL, capacity: Int, log: SDKLog, loadEnding: (@Sendable () -> Void)?) throws {
        self.loadEnding = loadEnding
        try POSIXFile.ensureDirectory(directory)
        self.capacity = max(1, capacity)
        self.log = log
        files = WriterFiles(directory: directory, base: "visitors.log")
        snapshotURL = directory.appendingPathComponent("visitors.snapshot")
        ledger = DirectoryLedger.shared(directory: directory)
        if let owner = try FileLock.acquire(files.ownerLock, create: true) {
            token = nil
            roleLock = owner
        } else {
            (token, roleLock) = try FileLock.createUnique(in: directory, prefix: files.writerPrefix)
        }
        records = VisitorTable(capacity: self.capacity)
        writer = ChangeWriter(file: try AppendFile(files.file(token)), lock: lock, log: log)
        // A thread of its own: the load can take seconds and must not hold a worker of the
        // pool Swift concurrency runs on. Weakly held, so the thread's exit, which may come
        // late on a busy machine, never delays the store's release (and its final write).
        let loader = Thread { [weak self, lock = self.lock, loading = self.loading] in
            self?.load()
            // Done only once `self` is let go: a caller let in by the load may drop the store at
            // once, and its release (role lock, last lines) must not wait for this thread.
            for waiter in loading.finish(lock) { waiter.resume() }
        }
        loader.name = "convert.visitor-store.load"
        loader.start()
    }

    /// Waits until the stored visitors have been read.
    public func prepare() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            lock.lock()
            if loading.done {
                lock.unlock()
                continuation.resume()
            } else {
                loading.waiters.append(continuation)
                lock.unlock()
            }
        }
    }

    /// The number of visitors held.
    public var count: Int { locked { records.count } }

    public func data(for key: VisitorKey) -> VisitorData? {
        locked {
            honourForgets(force: false)
            return records.value(for: key)
        }
    }

    @discardableResult
    public func update<Result>(_ key: VisitorKey, _ body: (inout VisitorData) -> Result) -> Result {
        locked {
            honourForgets(force: false)
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

    /// Deletes the visitor's record durably, for every process on the directory: the forget is
    /// recorded in the directory's ledger (which every process honours when it loads, compacts
    /// and within ``DirectoryLedger/refreshInterval`` of its next call), this store's files are
    /// rewritten without the visitor, and so are the files of writers that have stopped.
    public func removeData(for key: VisitorKey) {
        locked {
            do {
                try ledger.recordForget(key)
            } catch {
                log.error("visitor forget not recorded for other processes: \(error)")
            }
            _ = records.removeValue(for: key)
            do {
                try compact()
            } catch {
                log.error("visitor data not deleted from disk: \(error)")
            }
            eraseFromStoppedWriters(key)
        }
    }

    /// Removes the visitor from the files of writers that are gone (their locks are free):
    /// nobody would rewrite them before the next load.
    private func eraseFromStoppedWriters(_ key: VisitorKey) {
        do {
            try files.forEachStoppedWriter(excluding: token) { writer in
                if writer == nil { _ = try VisitorFiles.erase(key, from: snapshotURL, isSnapshot: true) }
                _ = try VisitorFiles.erase(key, from: files.file(writer))
            }
        } catch {
            log.error("visitor data not deleted from a stopped process's file: \(error)")
        }
    }

    /// Drops the visitors another process forgot since this store last looked, rewriting this
    /// store's files when it held any; reads the ledger only when `force` or when it is due.
    /// Called under `lock`.
    private func honourForgets(force: Bool) {
        // Timed under the store's own lock: a call that is not due touches nothing shared.
        let now = ContinuousClock.now
        if !force, let next = nextLedgerRead, now < next { return }
        nextLedgerRead = now + DirectoryLedger.refreshInterval
        let mark = ledger.refresh()
        guard mark != appliedMark else { return }
        let forgotten = ledger.forgotten(since: appliedMark)
        appliedMark = mark
        writer.mark = mark
        guard !forgotten.isEmpty else { return }
        guard let hash = ledger.hasher() else { return }
        var gone: [VisitorKey] = []
        records.forEach { key, _ in
            if forgotten.contains(hash(key)) { gone.append(key) }
        }
        guard !gone.isEmpty else { return }
        for key in gone { _ = records.removeValue(for: key) }
        do {
            try compact()
        } catch {
            log.error("visitor data forgotten by another process not deleted from disk: \(error)")
        }
    }

    /// Records the exposure in the directory's ledger under its lock, so that of several
    /// processes on the directory exactly one sends it.
    public func recordExposureOnce(_ key: VisitorKey, marker: String) -> Bool {
        do {
            return try ledger.claimOnce(key, marker: marker)
        } catch {
            // Unrecorded here is sent here: an exposure may repeat, never go missing.
            log.error("visitor store: exposure not recorded for other processes: \(error)")
            return true
        }
    }

    public func flush() async -> Int {
        await prepare()
        return locked {
            writer.writePending()
            writer.file.sync()
            defer { unflushed = 0 }
            return unflushed
        }
    }

    deinit {
        lock.withLock { writer.writePending() }
        // A writer beside the owner that recorded nothing leaves nothing behind.
        if token != nil, !logHasData {
            try? POSIXFile.remove(writer.file.url)
            roleLock.removeFile()
        }
    }

    /// Runs `body` under the lock once the load is done.
    private func locked<Result>(_ body: () -> Result) -> Result {
        lock.lock()
        defer { lock.unlock() }
        while !loading.done { lock.wait() }
        return body()
    }

    /// Called under `lock`.
    private func persist(_ key: VisitorKey, _ data: VisitorData) {
        do {
            unflushed += 1
            if logLines + 1 > max(1024, 2 * records.count) {
                try compact()
            } else {
                if writer.append(key, data) { logLines += 1 }
                logHasData = true
            }
        } catch {
            log.error("visitor data not persisted: \(error)")
        }
    }

    /// Writes every visitor held: the owner a new snapshot (emptying its log), any other writer
    /// its own log. Called under `lock`.
    private func compact() throws {
        var out: [UInt8] = []
        out.reserveCapacity(records.count * 128)
        if appliedMark != 0 { out += VisitorFiles.markLine(appliedMark) }
        records.forEach { key, data in out += VisitorFiles.line(key: key, data: data) }
        if token == nil {
            try POSIXFile.atomicWrite(Data(out), to: snapshotURL)
            try writer.replaceAll()
            logLines = 0
        } else {
            try writer.replaceAll(with: Data(out))
            logLines = records.count
            logHasData = records.count > 0
        }
    }

    // MARK: Loading

    /// Reads the snapshot and every change log, takes over the logs of writers that are gone;
    /// the loader thread then opens the store for calls.
    private func load() {
        var table = VisitorTable(capacity: capacity)
        let mark = ledger.refresh()
        var skipped = 0
        var ownLines = 0
        var rewrite = false
        let abandoned = files.abandonedWriters(excluding: token)
        let abandonedTokens = Set(abandoned.map(\.token))
        for other in abandonedTokens { files.removeTemporaryFiles(of: files.file(other)) }
        if token == nil {
            files.removeTemporaryFiles(of: files.file(nil))
            files.removeTemporaryFiles(of: snapshotURL)
        }
        // The owner's log before the snapshot: a compaction between the two reads then means
        // reading some records twice (harmless), never missing them.
        let ownerLog = read(files.file(nil))
        if let snapshot = read(snapshotURL).map({ VisitorFiles.parse($0, isSnapshot: true) }) {
            let kept = VisitorFiles.kept(snapshot, ledger: ledger)
            if kept.count < snapshot.records.count { rewrite = true }
            for record in kept { table.set(record.data, for: record.key) }
            if snapshot.unsealed > 0 { rewrite = true }
            if snapshot.skipped > 0 || snapshot.tornTailAt != nil || snapshot.unreadableSnapshot {
                if token == nil {
                    let moved = POSIXFile.quarantine(snapshotURL)
                    log.error("visitor snapshot is corrupt; moved aside to \(moved)")
                    rewrite = true
                } else {
                    log.error("visitor snapshot is corrupt; its owner will move it aside")
                }
            }
        }
        if let contents = ownerLog.map({ VisitorFiles.parse($0) }) {
            let kept = VisitorFiles.kept(contents, ledger: ledger)
            if kept.count < contents.records.count, token == nil { rewrite = true }
            for record in kept { table.set(record.data, for: record.key) }
            skipped += contents.skipped
            if token == nil {
                ownLines = contents.records.count
                if contents.unsealed > 0 || contents.skipped > 0 { rewrite = true }
                if let torn = contents.tornTailAt {
                    skipped += 1
                    if !rewrite { truncate(at: torn) }
                }
            }
        }
        for other in files.writerTokens() where other != token {
            guard let contents = read(files.file(other)).map({ VisitorFiles.parse($0) }) else { continue }
            skipped += contents.skipped
            if abandonedTokens.contains(other), contents.tornTailAt != nil { skipped += 1 }
            for record in Self.latest(VisitorFiles.kept(contents, ledger: ledger)) {
                table.modify(record.key) { VisitorFiles.merge(record.data, into: &$0) }
            }
        }
        if !abandoned.isEmpty { rewrite = true }

        // Said before the load counts as done, so whoever waited for it sees the line.
        if skipped > 0 { log.warn("visitor store: skipped \(skipped) unreadable record(s)") }
        var rewritten = true
        lock.withLock {
            records = table
            appliedMark = mark
            writer.mark = mark
            logLines = ownLines
            if rewrite {
                do {
                    try compact()
                } catch {
                    rewritten = false
                    log.error("visitor store: could not rewrite its files: \(error)")
                }
            }
        }
        if rewritten {
            for (other, otherLock) in abandoned {
                try? POSIXFile.remove(files.file(other))
                otherLock.removeFile()
            }
        }
        loadEnding?()
    }

    /// The last record of each key, in the order of those last records.
    private static func latest(_ records: [(key: VisitorKey, data: VisitorData)]) -> [(key: VisitorKey, data: VisitorData)] {
        var seen = Set<VisitorKey>()
        var out: [(key: VisitorKey, data: VisitorData)] = []
        for record in records.reversed() where seen.insert(record.key).inserted { out.append(record) }
        return out.reversed()
    }

    private func read(_ url: URL) -> [UInt8]? {
        do {
            return try POSIXFile.readBytes(url)
        } catch {
            log.error("visitor store: \(error)")
            return nil
        }
    }

    private func truncate(at length: Int) {
        do {
            try writer.file.truncate(to: length)
        } catch {
            log.error("visitor store: \(error)")
        }
    }
}

/// Whether the visitor store's load is done, and the `prepare()` callers waiting for it: apart
/// from the store, so the loader thread marks the load done after letting the store go.
/// Guarded by the store's lock.
private final class LoadState: @unchecked Sendable {
    var done = false
    var waiters: [CheckedContinuation<Void, Never>] = []

    /// Marks the load done and wakes the threads waiting for it; returns the callers to resume.
    func finish(_ lock: NSCondition) -> [CheckedContinuation<Void, Never>] {
        lock.withLock {
            done = true
            lock.broadcast()
            defer { waiters.removeAll() }
            return waiters
        }
    }
}
