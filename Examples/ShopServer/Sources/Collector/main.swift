// A stand-in for Convert's tracking host: counts the events POSTed to /track/…, deduplicating
// conversions by visitor and goal, and prints the counts at SIGTERM or SIGINT (and on GET /stats).
//
//   swift run -c release collector [--port 8081]
import ConvertJSON
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import UnixSignals
import Synchronization

/// The tracking API's request body, as far as counting needs it. Parsed with the SDK's JSON
/// parser: the collector shares the machine with the server under load, and Foundation's
/// `JSONDecoder` cost it several microseconds per event.
struct Batch {
    struct Event {
        let eventType: String
        let goalId: String?
    }
    struct Visitor {
        let visitorId: String
        let events: [Event]
    }
    let visitors: [Visitor]

    struct Malformed: Error, CustomStringConvertible {
        let description: String
    }

    init(json: JSONValue) throws {
        guard let visitors = json["visitors"]?.arrayValue else { throw Malformed(description: "no visitors array") }
        self.visitors = try visitors.map { visitor in
            guard let id = visitor["visitorId"]?.stringValue, let events = visitor["events"]?.arrayValue else {
                throw Malformed(description: "a visitor without visitorId or events")
            }
            return Visitor(visitorId: id, events: try events.map { event in
                guard let type = event["eventType"]?.stringValue, let data = event["data"], data.objectValue != nil else {
                    throw Malformed(description: "an event without eventType or data")
                }
                return Event(eventType: type, goalId: data["goalId"]?.stringValue)
            })
        }
    }
}

/// A body whose events are all bucketings, as the SDK writes it (compact, `accountId` first),
/// counted without building its values: `nil` for anything else — another event type, another
/// layout, an escaped string, unbalanced brackets, a cut or trailing byte — which the full parse
/// then judges. It checks brackets, strings and that layout, not every rule of JSON's grammar.
enum BucketingOnly {
    static func count(_ bytes: some Collection<UInt8>) -> Int? {
        bytes.withContiguousStorageIfAvailable(count) ?? nil
    }

    private static let start = Array(#"{"accountId":"#.utf8), visitors = Array(#""visitors":["#.utf8)
    private static let eventType = Array(#""eventType""#.utf8), bucketing = Array(#":"bucketing""#.utf8)

    private static func count(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard matches(start, bytes, at: 0) else { return nil }
        var open: [UInt8] = [], events = 0, index = 0, sawVisitors = false
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                open.append(byte)
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                guard let last = open.popLast(), last == (byte == UInt8(ascii: "}") ? UInt8(ascii: "{") : UInt8(ascii: "[")) else {
                    return nil
                }
                if open.isEmpty {
                    // Nothing may follow the document.
                    return index == bytes.count - 1 && sawVisitors ? events : nil
                }
            case UInt8(ascii: "\""):
                if open.count == 1, matches(visitors, bytes, at: index) { sawVisitors = true }
                if matches(eventType, bytes, at: index) {
                    // Every event type must be written exactly as the SDK writes a bucketing.
                    guard matches(bucketing, bytes, at: index + eventType.count) else { return nil }
                    events += 1
                    index += eventType.count + bucketing.count
                    continue
                }
                index += 1
                while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                    // An escape could spell a key: such bodies get the full parse.
                    if bytes[index] == UInt8(ascii: "\\") { return nil }
                    index += 1
                }
                if index >= bytes.count { return nil }
            default:
                break
            }
            index += 1
        }
        return nil
    }

    private static func matches(_ pattern: [UInt8], _ bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> Bool {
        guard bytes.count - index >= pattern.count else { return false }
        for offset in pattern.indices where bytes[index + offset] != pattern[offset] { return false }
        return true
    }
}

final class Counts: Sendable {
    private struct State {
        var batches = 0, events = 0, bucketing = 0, conversions = 0, duplicates = 0, rejected = 0
        var converted: Set<String> = []
    }
    private let state = Mutex(State())

    func record(_ batch: Batch) {
        state.withLock { state in
            state.batches += 1
            for visitor in batch.visitors {
                for event in visitor.events {
                    state.events += 1
                    if event.eventType == "bucketing" { state.bucketing += 1 }
                    guard event.eventType == "conversion", let goal = event.goalId else { continue }
                    if state.converted.insert("\(visitor.visitorId)\u{0}\(goal)").inserted {
                        state.conversions += 1
                    } else {
                        state.duplicates += 1
                    }
                }
            }
        }
    }

    func record(bucketing: Int) {
        state.withLock { state in
            state.batches += 1
            state.events += bucketing
            state.bucketing += bucketing
        }
    }

    func reject() { state.withLock { $0.rejected += 1 } }

    var summary: String {
        state.withLock { state in
            "batches \(state.batches), events \(state.events), bucketing \(state.bucketing), "
                + "conversions \(state.conversions), duplicated conversions \(state.duplicates), rejected bodies \(state.rejected)"
        }
    }
}

var port = 8081
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--port": port = arguments.next().flatMap(Int.init) ?? port
    default:
        print("usage: collector [--port 8081]")
        exit(2)
    }
}

var logger = Logger(label: "collector")
logger.logLevel = .info
let counts = Counts()
let router = Router()
router.post("/track/**") { request, context -> HTTPResponse.Status in
    do {
        let body = try await request.body.collect(upTo: 64 << 20)
        let bytes = body.readableBytesView
        // Conversions are counted by visitor and goal, so their bodies are parsed; a body of
        // bucketing events alone only needs to be whole, and its events counted.
        if let bucketing = BucketingOnly.count(bytes) {
            counts.record(bucketing: bucketing)
        } else {
            counts.record(try Batch(json: JSONParser.parse(bytes)))
        }
        return .ok
    } catch {
        counts.reject()
        context.logger.warning("rejected a body: \(error)")
        return .badRequest
    }
}
router.get("/stats") { _, _ in counts.summary + "\n" }

let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger)
let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
try await group.run()
print("collector: \(counts.summary)")
