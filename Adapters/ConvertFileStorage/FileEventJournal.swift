import ConvertStorage
import ConvertSupport
import Foundation

/// A journal file of pending tracking records: one line per record (`E <seq> <base64>`), one
/// per acknowledgement (`A <seq>`). Opening compacts it to the unacknowledged records; a torn
/// last line from a crash is skipped.
public final class FileEventJournal: EventJournal, @unchecked Sendable {
    // `live`, `next` and `lineCount` are guarded by `lock`.
    private let lock = NSLock()
    private let file: AppendFile
    private var live: [UInt64: Data] = [:]
    private var order: [UInt64] = []
    private var next: UInt64 = 1
    private var lineCount = 0
    private let log: SDKLog

    /// Opens (or creates) the journal `name` in `directory`.
    public init(directory: URL, name: String = "events.journal", log: SDKLog = .silent) throws {
        try POSIXFile.ensureDirectory(directory)
        self.log = log
        let url = directory.appendingPathComponent(FileStorage.safeName(name))
        var live: [UInt64: Data] = [:]
        var order: [UInt64] = []
        var maxSequence: UInt64 = 0
        if let data = try POSIXFile.read(url) {
            var skipped = 0
            for line in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
                let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 2)
                guard fields.count >= 2, let sequence = UInt64(String(decoding: fields[1], as: UTF8.self)) else {
                    skipped += 1
                    continue
                }
                maxSequence = max(maxSequence, sequence)
                switch fields[0].first {
                case UInt8(ascii: "E"):
                    guard fields.count == 3, let payload = Data(base64Encoded: Data(fields[2])) else {
                        skipped += 1
                        continue
                    }
                    if live[sequence] == nil { order.append(sequence) }
                    live[sequence] = payload
                case UInt8(ascii: "A"):
                    live[sequence] = nil
                default:
                    skipped += 1
                }
            }
            if skipped > 0 { log.warn("event journal \(url.path): skipped \(skipped) unreadable line(s)") }
        }
        order = order.filter { live[$0] != nil }
        self.live = live
        self.order = order
        next = maxSequence + 1
        file = try AppendFile(url)
        try file.replace(with: Self.lines(order.map { ($0, live[$0]!) }))
        lineCount = order.count
    }

    private static func lines(_ records: [(UInt64, Data)]) -> Data {
        var out = Data()
        for (sequence, payload) in records {
            out.append(Data("E \(sequence) ".utf8))
            out.append(payload.base64EncodedData())
            out.append(UInt8(ascii: "\n"))
        }
        return out
    }

    public func append(_ payload: Data) throws -> UInt64 {
        try lock.withLock {
            let sequence = next
            try file.append(Self.lines([(sequence, payload)]))
            next += 1
            live[sequence] = payload
            order.append(sequence)
            lineCount += 1
            return sequence
        }
    }

    public func acknowledge(_ sequences: [UInt64]) throws {
        try lock.withLock {
            let known = sequences.filter { live[$0] != nil }
            guard !known.isEmpty else { return }
            for sequence in known { live[sequence] = nil }
            if live.isEmpty {
                order.removeAll()
                try file.replace(with: Data())
                lineCount = 0
                return
            }
            var acks = Data()
            for sequence in known { acks.append(Data("A \(sequence)\n".utf8)) }
            try file.append(acks)
            lineCount += known.count
            if lineCount > 4 * live.count + 1024 {
                order = order.filter { live[$0] != nil }
                try file.replace(with: Self.lines(order.map { ($0, live[$0]!) }))
                lineCount = order.count
            }
        }
    }

    public func pending() throws -> [(sequence: UInt64, payload: Data)] {
        lock.withLock {
            order.compactMap { sequence in live[sequence].map { (sequence, $0) } }
        }
    }
}
