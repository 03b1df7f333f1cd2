import ConvertTesting
import Foundation

/// CRC-32 (IEEE, as zlib computes it), written here independently of the adapter so the tests
/// check its line format rather than reuse it.
func testCRC32(_ text: String) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in text.utf8 {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    }
    return crc ^ 0xFFFF_FFFF
}

/// `content` sealed as the file adapters write a line: `<content> <crc32 as 8 hex digits>`.
func sealedLine(_ content: String) -> String {
    let hex = String(testCRC32(content), radix: 16)
    return content + " " + String(repeating: "0", count: 8 - hex.count) + hex
}

/// Whether `line` carries a correct seal.
func isSealed(_ line: Substring) -> Bool {
    guard let space = line.lastIndex(of: " ") else { return false }
    return sealedLine(String(line[..<space])) == line
}

func base64(_ text: String) -> String { Data(text.utf8).base64EncodedString() }

/// The names in `directory` that start with `prefix`.
func fileNames(in directory: URL, prefix: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasPrefix(prefix) }.sorted()
}

/// A JournalProbe child process and the lines it has printed.
final class ProbeProcess: @unchecked Sendable {
    let process = Process()
    private let output = Pipe()
    private var text = ""
    let run: String

    init(directory: URL, run: String, server: String) throws {
        self.run = run
        process.executableURL = BuiltProducts.executable("JournalProbe")
        process.arguments = [directory.path, "100000", run, server]
        process.standardOutput = output
        try process.run()
    }

    /// Reads output until `ack <n>` appears (or the output ends).
    func waitForAck(_ n: Int) {
        while !text.contains("\nack \(n)\n") {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { return }
            text += String(decoding: chunk, as: UTF8.self)
        }
    }

    /// Kills the process with SIGKILL; returns the goal ids it acknowledged (complete lines only).
    func kill() -> (goals: [String], role: String?) {
        _ = Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        text += String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let complete = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        let goals = complete.compactMap { $0.hasPrefix("ack ") ? "goal-\(run)-\($0.dropFirst(4))" : nil }
        let role = complete.first { $0.hasPrefix("role ") }.map { String($0.dropFirst(5)) }
        return (goals, role)
    }
}

/// Runs blocking work (process waits, pipe reads, long synchronous loops) on a thread of its own:
/// Swift concurrency runs every test on a pool of one thread per core, and a test that blocks
/// one of them stalls the others for as long.
func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try work() }) }
        thread.stackSize = 1 << 20
        thread.start()
    }
}
