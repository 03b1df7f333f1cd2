import Foundation

/// The command line: `shop-server [--port 8080] [--collector URL] [--config FILE] [--redis-port N] …`.
struct Options {
    var hostname = "127.0.0.1"
    var port = 8080
    /// Where tracking goes: the local collector (`swift run collector`).
    var collector = "http://127.0.0.1:8081"
    /// A config file; the SDK's sample config when absent.
    var configFile: String?
    /// A local Redis to share visitor data through; memory only when absent.
    var redisPort: Int?
    var redisHost = "127.0.0.1"
    /// Ports of a local Redis Cluster's nodes to seed from (on `redisHost`), instead of one node.
    var redisClusterPorts: [Int] = []
    /// Tracking events that release a request to the collector; the SDK's default (10) unless
    /// given: under load a request carries what waits anyway.
    var batchSize: Int?
    /// File persistence in this directory (events journaled before `POST /buy` answers, sent
    /// again by the next start after a crash); memory only when absent.
    var dataDirectory: String?
    /// How long the SDK delivers pending events at shutdown (keep it below the grace period).
    var shutdownTimeout = 10
    /// Decide and record, but send no tracking.
    var tracking = true
    /// Tracking and config requests through Foundation's `URLSession` instead of AsyncHTTPClient
    /// on the server's event loops.
    var urlSession = false
    /// The metrics and tracing hooks on every evaluation, and a tracing span per request
    /// (`--no-hooks` leaves them out).
    var observability = true
    var verbose = false

    static let usage = """
        usage: shop-server [--hostname 127.0.0.1] [--port 8080] [--collector http://127.0.0.1:8081]
                           [--config FILE] [--redis-port N | --redis-cluster PORT,PORT…] [--redis-host 127.0.0.1] [--batch-size N] [--shutdown-timeout 10]
                           [--data-dir DIR]
                           [--no-tracking] [--no-hooks] [--url-session] [--verbose]
        """

    init(_ arguments: [String]) throws {
        var iterator = arguments.makeIterator()
        func value(_ name: String) throws -> String {
            guard let value = iterator.next() else { throw UsageError(message: "\(name) needs a value") }
            return value
        }
        func number(_ name: String) throws -> Int {
            let text = try value(name)
            guard let number = Int(text), number > 0 else { throw UsageError(message: "\(name): \(text) is not a positive number") }
            return number
        }
        while let argument = iterator.next() {
            switch argument {
            case "--hostname": hostname = try value(argument)
            case "--port": port = try number(argument)
            case "--collector": collector = try value(argument)
            case "--config": configFile = try value(argument)
            case "--redis-port": redisPort = try number(argument)
            case "--redis-host": redisHost = try value(argument)
            case "--redis-cluster":
                let text = try value(argument)
                redisClusterPorts = try text.split(separator: ",").map { part in
                    guard let port = Int(part), port > 0 else { throw UsageError(message: "--redis-cluster: \(part) is not a port") }
                    return port
                }
            case "--batch-size": batchSize = try number(argument)
            case "--shutdown-timeout": shutdownTimeout = try number(argument)
            case "--data-dir": dataDirectory = try value(argument)
            case "--no-tracking": tracking = false
            case "--no-hooks": observability = false
            case "--url-session": urlSession = true
            case "--verbose": verbose = true
            default: throw UsageError(message: "unknown option \(argument)")
            }
        }
    }
}

struct UsageError: Error, CustomStringConvertible {
    let message: String
    var description: String { "\(message)\n\(Options.usage)" }
}
