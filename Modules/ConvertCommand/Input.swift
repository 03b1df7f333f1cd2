import ConvertSwiftSDK
import Foundation

/// Reading files and JSON arguments, with errors that name what was wrong.
enum Input {
    static func read(_ path: String, for option: String) throws -> Data {
        if path == "-" { return FileHandle.standardInput.readDataToEndOfFile() }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw UsageError("--\(option): cannot read \(path)")
        }
        return data
    }

    /// The lines of a file, or of standard input for `-`, read as they arrive.
    static func lines(_ path: String, for option: String) throws -> LineReader {
        if path == "-" { return LineReader(FileHandle.standardInput) }
        guard let handle = FileHandle(forReadingAtPath: path) else { throw UsageError("--\(option): cannot read \(path)") }
        return LineReader(handle)
    }

    /// The SDK key secret: the `--sdk-key-secret` flag's value, else `CONVERT_SDK_KEY_SECRET`
    /// from the environment (an empty value counts as absent). Never printed.
    static func secret(_ flag: String?) -> String? {
        if let flag { return flag }
        guard let value = ProcessInfo.processInfo.environment[secretVariable], !value.isEmpty else { return nil }
        return value
    }

    static let secretVariable = "CONVERT_SDK_KEY_SECRET"

    /// A JSON object given on the command line, as rule data.
    static func object(_ text: String?, for option: String) throws -> [String: JSONValue] {
        guard let text else { return [:] }
        let json: JSONValue
        let bytes = Array(text.utf8)
        do throws(JSONParseError) {
            json = try JSONParser.parse(bytes)
        } catch {
            let (message, offset) = Self.syntaxError(error, in: bytes)
            throw UsageError("--\(option): \(Self.located(message, at: offset, in: bytes))")
        }
        guard case .object(let members) = json else { throw UsageError("--\(option) must be a JSON object") }
        return members
    }

    /// A JSON syntax error as a person reads it: the reason and the byte it is at, which for a
    /// trailing comma is the comma (the parser stops at the `}` or `]` after it).
    static func syntaxError(_ error: JSONParseError, in bytes: [UInt8]) -> (message: String, offset: Int?) {
        switch error {
        case .empty: return ("empty", nil)
        case .tooDeep(let offset, let limit): return ("JSON nesting deeper than \(limit) levels", offset)
        case .invalidJSON(let offset, let reason):
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "}") || bytes[offset] == UInt8(ascii: "]") {
                var before = offset - 1
                while before >= 0, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[before]) { before -= 1 }
                if before >= 0, bytes[before] == UInt8(ascii: ",") {
                    return ("not valid JSON: a trailing comma before '\(Character(UnicodeScalar(bytes[offset])))'", before)
                }
            }
            return ("not valid JSON: \(reason)", offset)
        }
    }

    /// `message` at `offset` of `bytes` as "line:column: message", for one-line inputs "column N: message".
    static func located(_ message: String, at offset: Int?, in bytes: [UInt8]) -> String {
        guard let offset else { return message }
        let position = JSONParser.lineAndColumn(ofByte: offset, in: bytes)
        return position.line == 1 ? "column \(position.column): \(message)" : "\(position.line):\(position.column): \(message)"
    }

    /// An SDK over a config file (raw CDN body or `{"environment", "data"}`), offline: no network, no tracking.
    static func offlineSDK(configPath: String, environment: String?) async throws -> ConvertSwiftSDK {
        let data = try read(configPath, for: "config")
        let configuration = ConvertConfiguration(sdkKey: "", environment: environment, networkTracking: false,
                                                 logLevel: .error, visitorStoreCapacity: 1_000_000, persistence: .memory)
        let sdk = ConvertSwiftSDK(configData: data, configuration: configuration, logSink: SilentLogSink())
        do {
            try await sdk.ready()
        } catch let error as ConvertError {
            throw UsageError("--config \(configPath): \(error.description)")
        }
        return sdk
    }
}

/// Writes JSON values deterministically (sorted keys, one line).
enum Output {
    static func line(_ value: JSONValue) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(value)) ?? Data("null".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// Writes `text` and a newline to standard output at once, unbuffered: a reader of a pipe
    /// sees each line as soon as it is written, not when a buffer fills.
    static func write(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func error(_ message: String) {
        FileHandle.standardError.write(Data("convert: \(message)\n".utf8))
    }

    static func warning(_ message: String) {
        error("warning: \(message)")
    }
}

/// Splits a file's bytes into lines as they arrive (a pipe delivers them as the writer writes),
/// so a line can be answered before the next one is written. Lines exclude their `\n` and a
/// `\r` before it; a last line without `\n` is still a line.
struct LineReader {
    /// A line longer than ``maximumLineBytes``: it is skipped, never buffered whole.
    struct LineTooLong: Error {}

    /// The longest line read (a visitor line is a few hundred bytes).
    static let maximumLineBytes = 1 << 20

    private let handle: FileHandle
    private var buffer: [UInt8] = []
    /// Inside a line that was too long: its bytes are dropped up to its newline.
    private var skipping = false
    /// Where the next line starts, and how far a newline has been looked for.
    private var start = 0
    private var scanned = 0
    private var finished = false

    init(_ handle: FileHandle) {
        self.handle = handle
    }

    /// The next line, or `nil` at the end of input; blocks until a whole line (or the end) arrives.
    /// Throws ``LineTooLong`` once for a line over ``maximumLineBytes``; the next call goes on
    /// after it.
    mutating func next() throws -> ArraySlice<UInt8>? {
        while true {
            if skipping {
                if let newline = buffer[scanned...].firstIndex(of: UInt8(ascii: "\n")) {
                    skipping = false
                    start = newline + 1
                    scanned = start
                    continue
                }
                buffer.removeAll(keepingCapacity: true)
                start = 0
                scanned = 0
                if finished { return nil }
                try fill()
                continue
            }
            if let newline = buffer[scanned...].firstIndex(of: UInt8(ascii: "\n")) {
                guard newline - start <= Self.maximumLineBytes else {
                    start = newline + 1
                    scanned = start
                    throw LineTooLong()
                }
                var line = buffer[start..<newline]
                if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
                start = newline + 1
                scanned = start
                return line
            }
            scanned = buffer.count
            if buffer.count - start > Self.maximumLineBytes {
                skipping = true
                throw LineTooLong()
            }
            if finished {
                guard start < buffer.count else { return nil }
                defer { start = buffer.count }
                return buffer[start...]
            }
            if start > 0 {
                buffer.removeFirst(start)
                scanned -= start
                start = 0
            }
            try fill()
        }
    }

    /// Appends what one `read(2)` returns: whatever has arrived, at most 64 KiB.
    private mutating func fill() throws {
        let capacity = 65_536
        let before = buffer.count
        buffer.append(contentsOf: repeatElement(0, count: capacity))
        let descriptor = handle.fileDescriptor
        while true {
            let count = buffer.withUnsafeMutableBytes { raw in
                read(descriptor, raw.baseAddress! + before, capacity)
            }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else {
                buffer.removeLast(capacity)
                throw RuntimeError("cannot read the input: \(String(cString: strerror(errno)))")
            }
            buffer.removeLast(capacity - count)
            if count == 0 { finished = true }
            return
        }
    }
}

extension JSONValue {
    /// The config inside a wrapped document (`{"data": {…}}` without a top-level `account_id`,
    /// the decoder's own test); `nil` when the document is not wrapped.
    var wrappedConfig: JSONValue? {
        guard case .object(let top) = self, top["account_id"] == nil, let data = top["data"], case .object = data else {
            return nil
        }
        return data
    }
}
