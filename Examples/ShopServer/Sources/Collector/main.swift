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
        counts.record(try Batch(json: JSONParser.parse(body.readableBytesView)))
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
