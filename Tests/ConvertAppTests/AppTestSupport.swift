import ConvertModel
import ConvertSynchronization
import ConvertTesting
import ConvertTracking
import ConvertTransport
import Foundation

/// A conversion whose goal id names it: `g7` for 7.
func goal(_ number: Int) -> TrackingEvent {
    TrackingEvent(accountId: "100", projectId: "200", visitorId: "visitor-\(number % 3)", segments: nil,
                  payload: .conversion(goalId: "g\(number)", goalData: nil, bucketingData: nil))
}

/// The goal ids the server received, in order, one per event.
func goalIds(in requests: [HTTPRequest]) -> [String] {
    requests.flatMap { request -> [String] in
        guard let body = request.body,
              let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
              let visitors = object["visitors"] as? [[String: Any]] else { return [] }
        return visitors.flatMap { visitor in
            ((visitor["events"] as? [[String: Any]]) ?? []).compactMap { ($0["data"] as? [String: Any])?["goalId"] as? String }
        }
    }
}

/// A fresh directory under the temporary directory.
func temporaryDirectory() -> URL {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("convert-app-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}

/// A config source delivering one document and counting on-demand refreshes.
final class CountingRefreshSource: RefreshableConfigSource, Sendable {
    private let document: Data
    private let count = Locked(0)
    private let waiters = Locked<[CheckedContinuation<Void, Never>]>([])

    init(_ document: Data) { self.document = document }

    func run(deliver: @escaping @Sendable (ConfigDocument) async -> Void) async throws {
        await deliver(ConfigDocument(bytes: document, origin: .network))
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
    }

    func refresh() async -> ConfigRefreshResult {
        count.withValue { $0 += 1 }
        let ready = waiters.withValue { waiters in
            defer { waiters = [] }
            return waiters
        }
        ready.forEach { $0.resume() }
        return .unchanged
    }

    var refreshes: Int { count.value }

    /// Returns once a refresh has happened.
    func refreshed() async {
        await withCheckedContinuation { continuation in
            let now = waiters.withValue { waiters -> Bool in
                if count.value > 0 { return true }
                waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }
}
