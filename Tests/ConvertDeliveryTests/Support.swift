import ConvertSwiftSDK
import ConvertTesting
import Foundation
import Testing

/// A fresh temporary directory, removed by the caller when done.
func temporaryDirectory() -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("convert-tests-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// What the tracking server received, decoded with Foundation's JSON reader (independent of the SDK's encoder).
struct ReceivedBatch {
    let raw: [String: Any]

    init(_ body: Data) throws {
        raw = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
    }

    var visitors: [[String: Any]] { raw["visitors"] as? [[String: Any]] ?? [] }

    /// (visitorId, eventType, data) for every event, in body order.
    var events: [(visitor: String, type: String, data: [String: Any])] {
        visitors.flatMap { visitor in
            (visitor["events"] as? [[String: Any]] ?? []).map {
                (visitor["visitorId"] as? String ?? "", $0["eventType"] as? String ?? "", $0["data"] as? [String: Any] ?? [:])
            }
        }
    }
}

/// A configuration pointing both endpoints at a loopback server.
func loopbackConfiguration(_ server: LoopbackHTTPServer, directory: URL? = nil, sdkKey: String = "10035569/10034190",
                           persistence: Persistence = .file) -> ConvertConfiguration {
    ConvertConfiguration(sdkKey: sdkKey, apiConfigEndpoint: server.baseURL + "/api/v1",
                         apiTrackEndpoint: server.baseURL + "/[project_id]/v1", dataRefreshIntervalMs: 3_600_000,
                         eventsBatchSize: 5, eventsReleaseIntervalMs: 50, logLevel: .debug,
                         persistence: persistence, storageDirectory: directory, requestTimeoutMs: 2000,
                         allowsInsecureHTTP: true)
}

/// The config fixture served as a CDN would.
func configReply(_ data: Data, etag: String? = nil) -> LoopbackHTTPServer.Reply {
    var headers = ["Content-Type": "application/json"]
    if let etag { headers["ETag"] = etag }
    return .respond(status: 200, headers: headers, body: data)
}
