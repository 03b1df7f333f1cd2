import ConvertSwiftSDK
import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization

/// What `POST /buy` answered, counted for the summary logged at shutdown.
final class Answers: Sendable {
    private let counts = Mutex<[String: Int]>([:])

    /// The word answered for `result`, counted.
    func answer(_ result: ConversionResult) -> String {
        let word = switch result {
        case .tracked: "tracked"
        case .duplicate: "duplicate"
        case .dropped: "dropped"
        default: "\(result)"
        }
        counts.withLock { $0[word, default: 0] += 1 }
        return word
    }

    var summary: String {
        let counts = counts.withLock { $0 }
        let words = ["tracked", "duplicate", "dropped"] + counts.keys.sorted().filter { !["tracked", "duplicate", "dropped"].contains($0) }
        return words.map { "\($0) \(counts[$0] ?? 0)" }.joined(separator: ", ")
    }
}

/// A service that logs when it starts and when its `run()` returns, to show the shutdown order.
struct LoggedService: Service {
    let name: String
    let base: any Service
    let logger: Logger

    func run() async throws {
        logger.info("\(name) starting")
        do {
            try await base.run()
            logger.info("\(name) stopped")
        } catch {
            logger.error("\(name) failed: \(error)")
            throw error
        }
    }
}

extension Response {
    /// A `200 OK` plain-text response (both `/` and `/plain` answer through it, so that they differ
    /// by the SDK's work alone).
    static func text(_ body: String) -> Response {
        Response(status: .ok, headers: [.contentType: "text/plain; charset=utf-8"],
                 body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }
}

extension String {
    /// Whether `needle` occurs in the string, compared byte for byte (Foundation's `contains`
    /// compares by locale rules and costs a request about half a microsecond).
    func mentions(_ needle: StaticString) -> Bool {
        var haystack = self
        return needle.withUTF8Buffer { pattern in
            haystack.withUTF8 { bytes in
                guard bytes.count >= pattern.count else { return false }
                return (0...(bytes.count - pattern.count)).contains { start in
                    bytes[start..<(start + pattern.count)].elementsEqual(pattern)
                }
            }
        }
    }
}
