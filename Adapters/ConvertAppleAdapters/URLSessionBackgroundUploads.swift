// Background sessions are Apple's (swift-corelibs-foundation declares them but cannot run them).
#if canImport(Darwin)
import ConvertSynchronization
import ConvertTransport
import Foundation

/// A ``BackgroundUploadSession`` on a background `URLSession`: the system's daemon carries the
/// uploads on while the app is suspended or after its process ended, and reports them to the
/// session of the same identifier in the next launch.
public final class URLSessionBackgroundUploads: NSObject, BackgroundUploadSession, URLSessionDataDelegate, @unchecked Sendable {
    // `@unchecked`: every stored property is a constant or a `Locked`.
    public let identifier: String
    private let bodies: URL
    private let session = Locked<URLSession?>(nil)
    private let receiver = Locked<(current: BackgroundUploadReceiver?, held: [BackgroundUploadCompletion])>((nil, []))

    /// Reattaches to, or creates, the system's session named `identifier`; request bodies are
    /// written under `bodies` (background sessions upload only from files).
    public init(identifier: String, bodies: URL) {
        self.identifier = identifier
        self.bodies = bodies
        super.init()
        try? FileManager.default.createDirectory(at: bodies, withIntermediateDirectories: true)
        let configuration = URLSessionConfiguration.background(withIdentifier: identifier)
        // Relaunch the app in the background when uploads end, so their outcomes are read.
        configuration.sessionSendsLaunchEvents = true
        // The system otherwise waits for good conditions (power, Wi-Fi) before sending.
        configuration.isDiscretionary = false
        session.set(URLSession(configuration: configuration, delegate: self, delegateQueue: nil))
    }

    public func setReceiver(_ receiver: BackgroundUploadReceiver) {
        let held = self.receiver.withValue { state in
            defer { state = (receiver, []) }
            return state.held
        }
        held.forEach(receiver.completed)
    }

    public func upload(_ request: HTTPRequest, label: String) throws {
        let file = bodies.appendingPathComponent(label)
        try (request.body ?? Data()).write(to: file, options: .atomic)
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method.rawValue
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        guard let task = session.value?.uploadTask(with: urlRequest, fromFile: file) else { throw TransportError.cancelled }
        // The label comes back with the task in a later launch: the ledger's key.
        task.taskDescription = label
        task.resume()
    }

    public func pendingLabels() async -> Set<String> {
        guard let session = session.value else { return [] }
        return Set(await session.allTasks.filter { $0.state != .completed }.compactMap(\.taskDescription))
    }

    public func cancel(label: String) {
        session.value?.getAllTasks { tasks in tasks.first { $0.taskDescription == label }?.cancel() }
    }

    public func runSystemCompletionHandler(_ handler: @escaping @Sendable () -> Void) {
        // The handler belongs to UIKit, which wants it called on the main thread.
        DispatchQueue.main.async(execute: handler)
    }

    public func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let label = task.taskDescription else { return }
        try? FileManager.default.removeItem(at: bodies.appendingPathComponent(label))
        let outcome: BackgroundUploadCompletion
        if let error {
            outcome = BackgroundUploadCompletion(label: label, failure: "\(error.localizedDescription)")
        } else if let http = task.response as? HTTPURLResponse {
            var headers: [String: String] = [:]
            for (key, value) in http.allHeaderFields {
                if let key = key as? String, let value = value as? String { headers[key] = value }
            }
            outcome = BackgroundUploadCompletion(label: label, response: HTTPResponse(status: http.statusCode, headers: headers))
        } else {
            outcome = BackgroundUploadCompletion(label: label, failure: "no HTTP response")
        }
        let current = receiver.withValue { state -> BackgroundUploadReceiver? in
            if state.current == nil { state.held.append(outcome) }
            return state.current
        }
        current?.completed(outcome)
    }

    public func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {
        // Every event the system held for the session was delivered: the app may be suspended.
        receiver.value.current?.finishedEvents()
    }
}
#endif
