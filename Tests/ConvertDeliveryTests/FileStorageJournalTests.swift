import ConvertFileStorage
import ConvertSwiftSDK
import ConvertTesting
import Foundation
import Testing

/// Damaged journal files: opening never traps, good records survive exactly, bad lines are
/// skipped, counted and reported once, and the file is rewritten clean.
@Suite(.serialized) struct FileStorageJournalTests {
    private func payloads(_ journal: FileEventJournal) throws -> [String] {
        try journal.pending().map { String(decoding: $0.payload, as: UTF8.self) }
    }

    private func isIncreasing(_ journal: FileEventJournal) throws -> Bool {
        let sequences = try journal.pending().map(\.sequence)
        return zip(sequences, sequences.dropFirst()).allSatisfy { $0 < $1 }
    }

    @Test func damagedSealedJournalKeepsGoodRecordsAndReportsBadOnesOnce() throws {
        let written = temporaryDirectory(), directory = temporaryDirectory()
        defer {
            try? FileManager.default.removeItem(at: written)
            try? FileManager.default.removeItem(at: directory)
        }
        do {
            let journal = try FileEventJournal(directory: written)
            let sequences = try (0..<5).map { try journal.append(Data("event-\($0)".utf8)) }
            try journal.acknowledge([sequences[1]])
        }
        // Damaged in a directory of its own, as a new process finds it: the journal that wrote
        // it is not open there, however long its release takes.
        let url = directory.appendingPathComponent("events.journal")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let original = try String(contentsOf: written.appendingPathComponent("events.journal"), encoding: .utf8)
        var lines = original.split(separator: "\n").map(String.init)
        #expect(lines.allSatisfy { isSealed($0[...]) }, "every line carries its checksum")
        let target = try #require(lines.firstIndex { $0.contains(base64("event-3")) })
        // Same length, still valid base64: only the checksum can tell.
        lines[target] = lines[target].replacingOccurrences(of: base64("event-3"), with: base64("event-8"))
        lines.append(sealedLine("R 18446744073709551615 " + base64("largest-sequence")))
        lines.append("R 99999999999999999999999 " + base64("garbage-number") + " 00000000")
        lines.append(sealedLine("R 99999999999999999999999 " + base64("overflowing-number")))
        lines.append(sealedLine("K -1"))
        lines.append("E 9 " + base64("old-format-after-sealed-lines"))
        let text = lines.joined(separator: "\n") + "\n" + "R 12 " + base64("torn")
        try Data(text.utf8).write(to: url)

        let logs = RecordingLogSink()
        let journal = try FileEventJournal(directory: directory, log: SDKLog(sink: logs, minimum: .debug))
        #expect(try payloads(journal) == ["event-0", "event-2", "event-4", "largest-sequence"])
        #expect(try isIncreasing(journal))
        let reports = logs.messages.filter { $0.contains("skipped") }
        #expect(reports.count == 1)
        #expect(reports.first?.contains("skipped 6 unreadable line(s)") == true, "\(reports)")
        let next = try journal.append(Data("after".utf8))
        #expect(next > (try journal.pending().dropLast().last?.sequence ?? 0))

        let rewritten = try String(contentsOf: url, encoding: .utf8)
        #expect(rewritten.hasSuffix("\n"))
        #expect(rewritten.split(separator: "\n").allSatisfy(isSealed))
        #expect(!rewritten.contains(base64("event-8")), "an altered record is never kept")
    }

    @Test func oldFormatJournalWithHugeAndGarbageNumbersIsDeliveredOnceAndRewritten() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("events.journal")
        let old = [
            "E 1 " + base64("legacy-1"),
            "E 18446744073709551615 " + base64("legacy-largest"),
            "E 99999999999999999999 " + base64("overflowing"),
            "E 12x " + base64("not-a-number"),
            "E -3 " + base64("negative"),
            "A 18446744073709551614",
            "E 3 " + base64("legacy-3"),
            "A 1",
            "E 4 !!!",
        ].joined(separator: "\n") + "\nE 5 " + base64("torn")
        try Data(old.utf8).write(to: url)
        let logs = RecordingLogSink()
        do {
            let journal = try FileEventJournal(directory: directory, log: SDKLog(sink: logs, minimum: .debug))
            #expect(try payloads(journal) == ["legacy-largest", "legacy-3"])
            #expect(try isIncreasing(journal))
            let next = try journal.append(Data("new".utf8))
            #expect(try journal.pending().map(\.sequence).last == next)
            #expect(try payloads(journal) == ["legacy-largest", "legacy-3", "new"])
        }
        #expect(logs.messages.filter { $0.contains("skipped") }.count == 1)
        #expect(logs.contains("skipped 5 unreadable line(s)"))
        let rewritten = try String(contentsOf: url, encoding: .utf8)
        #expect(rewritten.split(separator: "\n").allSatisfy(isSealed), "the old format is rewritten")

        let reopenLogs = RecordingLogSink()
        let again = try FileEventJournal(directory: directory, log: SDKLog(sink: reopenLogs, minimum: .debug))
        #expect(try payloads(again) == ["legacy-largest", "legacy-3", "new"])
        #expect(!reopenLogs.contains("skipped"))
        try again.acknowledge(try again.pending().map(\.sequence))
        #expect(try again.pending().isEmpty)
    }

    @Test func journalsInOneProcessShareOneFile() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try FileEventJournal(directory: directory)
        let second = try FileEventJournal(directory: directory)
        let a = try first.append(Data("a".utf8))
        let b = try second.append(Data("b".utf8))
        #expect(a != b)
        #expect(try first.pending().map(\.sequence) == [a, b])
        #expect(first.isOwner && second.isOwner)
        #expect(fileNames(in: directory, prefix: "events.journal.w-").isEmpty)
    }
}
