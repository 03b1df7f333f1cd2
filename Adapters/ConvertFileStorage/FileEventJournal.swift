import ConvertEnvironment
import ConvertStorage
import ConvertSynchronization
import Foundation

/// A journal file of pending tracking records, safe for several processes on one directory.
///
/// Each line is a record or an acknowledgement, sealed with a CRC-32 (see ``JournalFile``);
/// a line that fails its checksum is skipped and never delivered, a torn last line from a
/// kill is cut off, and opening compacts the file to the unacknowledged records. Skipped lines
/// are counted in one log line per open.
///
/// Several processes: the process holding the advisory lock (`flock`) on `<name>.lock`
/// writes `<name>`; every other process writes its own `<name>.w-<token>`, holding a lock on
/// `<name>.w-<token>.lock`. Nobody writes or compacts another's file, so sequence numbers
/// never collide and no compaction drops another's records. A free lock means its writer is
/// gone: whoever opens next moves that writer's files into its own keeping (a rename, under the
/// abandoned lock, so exactly one process takes them), delivers the records, and folds them
/// into its own file with a note naming what was folded, so a kill at any step neither loses
/// nor repeats them. Instances opened on the same file within one process share one journal.
public final class FileEventJournal: EventJournal {
    private let core: JournalCore

    /// Opens (or creates) the journal `name` in `directory`.
    public init(directory: URL, name: String = "events.journal", log: SDKLog = .silent) throws {
        core = try JournalCore.shared(directory: directory, name: FileStorage.safeName(name), log: log)
    }

    /// Whether this process holds the directory's main journal (`false`: it writes its own
    /// beside it, which the main journal's next owner takes over once this process is gone).
    package var isOwner: Bool { core.token == nil }

    public func append(_ payload: Data) throws -> UInt64 { try core.append(payload, visitor: nil) }
    public func append(_ payload: Data, visitor: VisitorKey) throws -> UInt64 { try core.append(payload, visitor: visitor) }
    public func acknowledge(_ sequences: [UInt64]) throws { try core.acknowledge(sequences) }
    public func pending() throws -> [(sequence: UInt64, payload: Data)] { core.pending() }

    /// Records the forget for every process on the directory (see ``DirectoryLedger``) and
    /// erases the visitor's records from this journal's file (acknowledged lines included) and
    /// from the files of writers that have stopped; returns the sequences erased here.
    public func forget(_ visitor: VisitorKey) throws -> [UInt64] { try core.forget(visitor) }

    /// Erases the records whose visitor some process forgot after they were written; returns
    /// their sequences, which must not be sent.
    public func takeForgotten() -> [UInt64] { core.takeForgotten() }
}

/// One open journal file. A final class whose mutable fields are guarded by `lock`.
final class JournalCore: @unchecked Sendable {
    private let lock = NSLock()
    private var live: [UInt64: Data] = [:]
    private var tags: [UInt64: JournalFile.Tag] = [:]
    private var order: [UInt64] = []
    private let ledger: DirectoryLedger
    /// The directory's visitor hash, known once its seeds are.
    private let visitorHash: (@Sendable (VisitorKey) -> UInt64)?
    /// Forgets at or past this ledger offset have not been checked against the records yet.
    private var checkedMark: UInt64 = 0
    private var next: UInt64 = 1
    private var lineCount = 0
    /// Segments folded into the file whose removal failed; named in it until they are gone.
    private var folds: [URL] = []
    private let file: AppendFile
    private let files: WriterFiles
    /// `nil` for the owner of `<name>`.
    let token: String?
    private let roleLock: FileLock
    private let log: SDKLog

    static func shared(directory: URL, name: String, log: SDKLog) throws -> JournalCore {
        try POSIXFile.ensureDirectory(directory)
        let key = directory.resolvingSymlinksInPath().appendingPathComponent(name).path
        return try OpenJournals.shared.core(for: key) { try JournalCore(directory: directory, name: name, log: log) }
    }

    private init(directory: URL, name: String, log: SDKLog) throws {
        self.log = log
        files = WriterFiles(directory: directory, base: name)
        ledger = DirectoryLedger.shared(directory: directory)
        do {
            try ledger.ensureSeeds()
        } catch {
            log.error("event journal: the directory's ledger cannot be written (a forget may not reach this journal's records): \(error)")
        }
        visitorHash = ledger.hasher()
        if let owner = try FileLock.acquire(files.ownerLock, create: true) {
            token = nil
            roleLock = owner
        } else {
            (token, roleLock) = try FileLock.createUnique(in: directory, prefix: files.writerPrefix)
        }
        let url = files.file(token)
        files.removeTemporaryFiles(of: url)
        var taken = 0
        for (other, otherLock) in files.abandonedWriters(excluding: token) {
            do {
                try Self.take(files.file(other), into: url, files: files)
                otherLock.removeFile()
                taken += 1
            } catch {
                log.error("event journal: could not take over \(files.file(other).path): \(error)")
            }
        }
        let own = try JournalFile.read(url) ?? JournalFile.Contents()
        var skipped = own.skipped
        var records = own.records
        let increasing = zip(records, records.dropFirst()).allSatisfy { $0.sequence < $1.sequence }
        if !increasing || own.maxSequence >= 1 << 62 {
            // Numbers out of order or absurdly large come from damaged or pre-lock files:
            // renumbering keeps them unique and far from overflow.
            records = records.enumerated().map { JournalFile.Record(sequence: UInt64($0.offset + 1), payload: $0.element.payload, tag: $0.element.tag) }
            next = UInt64(records.count + 1)
        } else {
            next = max(own.maxSequence, records.last?.sequence ?? 0) + 1
        }
        var consumed: [URL] = []
        var adopted = 0
        let folded = Set(own.folded)
        for segment in files.segments(of: url) {
            consumed.append(segment)
            if folded.contains(segment.lastPathComponent) { continue }
            guard let contents = try JournalFile.read(segment) else { continue }
            skipped += contents.skipped
            for record in contents.records {
                records.append(JournalFile.Record(sequence: next, payload: record.payload, tag: record.tag))
                next += 1
                adopted += 1
            }
        }
        checkedMark = ledger.refresh()
        let forgets = ledger.forgetOffsets()
        let before = records.count
        records.removeAll { record in record.tag.map { Self.isErased($0, by: forgets) } ?? false }
        if records.count < before { log.info("event journal \(url.path): \(before - records.count) record(s) of forgotten visitors erased") }
        for record in records {
            live[record.sequence] = record.payload
            if let tag = record.tag { tags[record.sequence] = tag }
            order.append(record.sequence)
        }
        var out: [UInt8] = []
        for segment in consumed { JournalFile.fold(segment.lastPathComponent, into: &out) }
        for record in records { JournalFile.record(record.sequence, record.payload, tag: record.tag, into: &out) }
        try POSIXFile.atomicWrite(Data(out), to: url)
        for segment in consumed where (try? POSIXFile.remove(segment)) == nil { folds.append(segment) }
        lineCount = order.count + folds.count
        file = try AppendFile(url)
        if skipped > 0 { log.warn("event journal \(url.path): skipped \(skipped) unreadable line(s)") }
        if adopted > 0 || taken > 0 {
            log.info("event journal \(url.path): took over \(adopted) pending record(s) from \(taken) stopped writer(s)")
        }
    }

    /// Moves an abandoned writer's file and segments into `target`'s segments. Called holding
    /// that writer's lock; each rename is atomic, so a kill leaves every file with one keeper.
    private static func take(_ abandoned: URL, into target: URL, files: WriterFiles) throws {
        if let contents = try JournalFile.read(abandoned) {
            // Its own folds first: those segments' records are already in its file.
            let prefix = abandoned.lastPathComponent + ".s-"
            for name in contents.folded where name.hasPrefix(prefix) && POSIXFile.isPlainName(name) {
                try POSIXFile.remove(files.directory.appendingPathComponent(name))
            }
        }
        files.removeTemporaryFiles(of: abandoned)
        for segment in files.segments(of: abandoned) {
            _ = try POSIXFile.move(segment, to: files.newSegment(of: target))
        }
        _ = try POSIXFile.move(abandoned, to: files.newSegment(of: target))
    }

    deinit {
        // A writer beside the owner leaves nothing behind once all its records are delivered.
        if token != nil, live.isEmpty, folds.isEmpty {
            try? POSIXFile.remove(file.url)
            roleLock.removeFile()
        }
    }

    /// Whether a record with `tag` is erased by a forget in `forgets` (hash → offset).
    private static func isErased(_ tag: JournalFile.Tag, by forgets: [UInt64: UInt64]) -> Bool {
        forgets[tag.visitor].map { $0 >= tag.mark } ?? false
    }

    func append(_ payload: Data, visitor: VisitorKey?) throws -> UInt64 {
        let tag = visitor.flatMap { key in visitorHash.map { JournalFile.Tag(visitor: $0(key), mark: ledger.mark) } }
        return try lock.withLock {
            let sequence = next
            var line: [UInt8] = []
            JournalFile.record(sequence, payload, tag: tag, into: &line)
            try file.append(Data(line))
            next += 1
            live[sequence] = payload
            if let tag { tags[sequence] = tag }
            order.append(sequence)
            lineCount += 1
            return sequence
        }
    }

    func acknowledge(_ sequences: [UInt64]) throws {
        try lock.withLock {
            let known = sequences.filter { live[$0] != nil }
            guard !known.isEmpty else { return }
            for sequence in known {
                live[sequence] = nil
                tags[sequence] = nil
            }
            if live.isEmpty || lineCount > 4 * live.count + 1024 {
                try compact()
                return
            }
            var acks: [UInt8] = []
            for sequence in known { JournalFile.acknowledgement(sequence, into: &acks) }
            try file.append(Data(acks))
            lineCount += known.count
        }
    }

    /// Rewrites the file with the live records. Called under `lock`.
    private func compact() throws {
        folds = folds.filter(POSIXFile.exists)
        order = order.filter { live[$0] != nil }
        var out: [UInt8] = []
        for segment in folds { JournalFile.fold(segment.lastPathComponent, into: &out) }
        for sequence in order { JournalFile.record(sequence, live[sequence] ?? Data(), tag: tags[sequence], into: &out) }
        try file.replace(with: Data(out))
        lineCount = order.count + folds.count
    }

    func forget(_ visitor: VisitorKey) throws -> [UInt64] {
        try ledger.recordForget(visitor)
        guard let hash = (visitorHash ?? ledger.hasher())?(visitor) else { return [] }
        let erased = try lock.withLock {
            let erased = order.filter { tags[$0]?.visitor == hash && live[$0] != nil }
            for sequence in erased {
                live[sequence] = nil
                tags[sequence] = nil
            }
            // Rewritten even when nothing is pending: acknowledged lines still hold the visitor's events.
            try compact()
            return erased
        }
        eraseFromStoppedWriters(hash)
        return erased
    }

    /// Removes the records of the visitor hashed `hash` from the files of writers that are gone
    /// (their locks are free): nobody would rewrite them before the next start.
    private func eraseFromStoppedWriters(_ hash: UInt64) {
        do {
            try files.forEachStoppedWriter(excluding: token) { writer in
                try Self.erase(hash, from: files.file(writer))
            }
        } catch {
            log.error("event journal: a forgotten visitor's records not erased from a stopped process's file: \(error)")
        }
    }

    /// Rewrites the journal at `url` without the records of `hash` (and without acknowledged
    /// lines), keeping its folds and sequence numbers.
    private static func erase(_ hash: UInt64, from url: URL) throws {
        guard let contents = try JournalFile.read(url),
              contents.records.contains(where: { $0.tag?.visitor == hash }) else { return }
        var out: [UInt8] = []
        for name in contents.folded { JournalFile.fold(name, into: &out) }
        for record in contents.records where record.tag?.visitor != hash {
            JournalFile.record(record.sequence, record.payload, tag: record.tag, into: &out)
        }
        try POSIXFile.atomicWrite(Data(out), to: url)
    }

    func takeForgotten() -> [UInt64] {
        let mark = ledger.refresh()
        return lock.withLock {
            guard mark != checkedMark else { return [] }
            let forgets = ledger.forgetOffsets(since: checkedMark)
            checkedMark = mark
            guard !forgets.isEmpty else { return [] }
            let erased = order.filter { sequence in
                live[sequence] != nil && tags[sequence].map { Self.isErased($0, by: forgets) } ?? false
            }
            guard !erased.isEmpty else { return [] }
            for sequence in erased {
                live[sequence] = nil
                tags[sequence] = nil
            }
            do {
                try compact()
            } catch {
                log.error("event journal: forgotten visitors' records not erased from disk: \(error)")
            }
            return erased
        }
    }

    func pending() -> [(sequence: UInt64, payload: Data)] {
        lock.withLock {
            order.compactMap { sequence in live[sequence].map { (sequence, $0) } }
        }
    }
}

/// The journals open in this process by path, so that instances on one file share it. A final
/// class whose mutable field is guarded by one lock.
private final class OpenJournals: Sendable {
    static let shared = OpenJournals()
    private let cores = Locked<[String: Entry]>([:])

    private struct Entry {
        weak var core: JournalCore?
    }

    func core(for key: String, open: () throws -> JournalCore) throws -> JournalCore {
        try cores.withValue { cores in
            if let core = cores[key]?.core { return core }
            cores = cores.filter { $0.value.core != nil }
            let core = try open()
            cores[key] = Entry(core: core)
            return core
        }
    }
}
