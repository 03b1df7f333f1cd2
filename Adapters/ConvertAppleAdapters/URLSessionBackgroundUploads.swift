import ConvertSynchronization
import ConvertTransport
import Foundation

/// A ``BackgroundUploadSession`` on a background `URLSession`: the system's daemon carries the
/// uploads on while the app is suspended or after its process ended, and reports them to the
/// session of the same identifier in the next launch. Only `URLSession`'s calls are
/// Apple-only (at the end of this file); the rest is compiled and tested on every platform.
public final class URLSessionBackgroundUploads: BackgroundUploadSession, Sendable {
    /// The calls a background session takes, with plain values: `upload` hands over a request
    /// whose body is in a file (`false` when the session is gone), `pending` answers the
    /// labels of unfinished uploads, `cancel` cancels one, `onMain` runs the system's handler.
    package struct Calls: Sendable {
        let upload: @Sendable (_ url: URL, _ method: String, _ headers: [(String, String)], _ file: URL, _ label: String) -> Bool
        let pending: @Sendable (@escaping @Sendable ([String]) -> Void) -> Void
        let cancel: @Sendable (String) -> Void
        let onMain: @Sendable (@escaping @Sendable () -> Void) -> Void

        package init(upload: @escaping @Sendable (URL, String, [(String, String)], URL, String) -> Bool,
                     pending: @escaping @Sendable (@escaping @Sendable ([String]) -> Void) -> Void,
                     cancel: @escaping @Sendable (String) -> Void,
                     onMain: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) {
            self.upload = upload
            self.pending = pending
            self.cancel = cancel
            self.onMain = onMain
        }
    }

    public let identifier: String
    private let bodies: URL
    private let calls = Locked<Calls?>(nil)
    private let receiver = Locked<(current: BackgroundUploadReceiver?, held: [BackgroundUploadCompletion])>((nil, []))

    /// The system's session named `identifier` (reattached to, or created), its request bodies
    /// written under `bodies` (background sessions upload only from files); `nil` where
    /// background sessions do not run (Linux). In an app extension, `sharedContainerIdentifier`
    /// names the app group whose container the system reads the bodies from (then `bodies`
    /// must be in it). Make one per identifier per process (``BackgroundSessions``).
    public convenience init?(identifier: String, bodies: URL, sharedContainerIdentifier: String? = nil) {
        self.init(identifier: identifier, bodies: bodies) { completed, finished in
            openBackgroundSession(identifier: identifier, sharedContainerIdentifier: sharedContainerIdentifier,
                                  completed: completed, finished: finished)
        }
        if calls.value == nil { return nil }
    }

    /// A session over `open`'s calls; `open` is handed what the session reports: each upload's
    /// outcome (label, status and headers, or a failure) and the end of the system's events.
    package init(identifier: String, bodies: URL,
                 open: (_ completed: @escaping @Sendable (String, Int?, [String: String], String?) -> Void,
                        _ finished: @escaping @Sendable () -> Void) -> Calls?) {
        self.identifier = identifier
        self.bodies = bodies
        try? FileManager.default.createDirectory(at: bodies, withIntermediateDirectories: true)
        let opened = open({ [weak self] label, status, headers, failure in
            self?.completed(label: label, status: status, headers: headers, failure: failure)
        }, { [weak self] in self?.receiver.value.current?.finishedEvents() })
        calls.set(opened)
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
        guard let calls = calls.value,
              calls.upload(request.url, request.method.rawValue, request.headers.map { ($0.name, $0.value) }, file, label) else { throw TransportError.cancelled }
    }

    public func pendingLabels() async -> Set<String> {
        guard let calls = calls.value else { return [] }
        return await withCheckedContinuation { done in calls.pending { done.resume(returning: Set($0)) } }
    }

    public func cancel(label: String) {
        calls.value?.cancel(label)
    }

    public func runSystemCompletionHandler(_ handler: @escaping @Sendable () -> Void) {
        // The handler belongs to UIKit, which wants it called on the main thread.
        if let calls = calls.value { calls.onMain(handler) } else { handler() }
    }

    private func completed(label: String, status: Int?, headers: [String: String], failure: String?) {
        try? FileManager.default.removeItem(at: bodies.appendingPathComponent(label))
        let outcome = status.map { BackgroundUploadCompletion(label: label, response: HTTPResponse(status: $0, headers: headers)) }
            ?? BackgroundUploadCompletion(label: label, failure: failure ?? "no HTTP response")
        let current = receiver.withValue { state -> BackgroundUploadReceiver? in
            if state.current == nil { state.held.append(outcome) }
            return state.current
        }
        current?.completed(outcome)
    }
}

/// One background session per identifier in a process: opening a second `URLSession` with the
/// identifier of one still alive is unsafe (`NSURLSession.h`), and a background session lives
/// as long as the process. A second SDK with the same key, or one made again, shares the
/// first's session; each of their deliveries hears every outcome (a delivery ignores labels
/// it did not start).
package enum BackgroundSessions {
    private static let open = Locked<[String: SharedBackgroundSession]>([:])

    /// The process's session named `identifier`, opened by `make` the first time.
    package static func shared(identifier: String, make: () -> (any BackgroundUploadSession)?) -> (any BackgroundUploadSession)? {
        open.withValue { table in
            if let session = table[identifier] { return session }
            guard let made = make() else { return nil }
            let session = SharedBackgroundSession(made)
            table[identifier] = session
            return session
        }
    }
}

/// A session several deliveries listen to: each receiver hears every outcome and the end of
/// the system's events; outcomes held before the first receiver go to it.
private final class SharedBackgroundSession: BackgroundUploadSession, Sendable {
    private let base: any BackgroundUploadSession
    private let receivers = Locked<(list: [BackgroundUploadReceiver], held: [BackgroundUploadCompletion])>(([], []))

    init(_ base: any BackgroundUploadSession) {
        self.base = base
        base.setReceiver(BackgroundUploadReceiver(
            completed: { [weak self] outcome in self?.completed(outcome) },
            finishedEvents: { [weak self] in self?.receivers.value.list.forEach { $0.finishedEvents() } }))
    }

    var identifier: String { base.identifier }

    func setReceiver(_ receiver: BackgroundUploadReceiver) {
        let held = receivers.withValue { state in
            defer { state = (state.list + [receiver], []) }
            return state.held
        }
        held.forEach(receiver.completed)
    }

    func upload(_ request: HTTPRequest, label: String) throws { try base.upload(request, label: label) }
    func pendingLabels() async -> Set<String> { await base.pendingLabels() }
    func cancel(label: String) { base.cancel(label: label) }
    func runSystemCompletionHandler(_ handler: @escaping @Sendable () -> Void) { base.runSystemCompletionHandler(handler) }

    private func completed(_ outcome: BackgroundUploadCompletion) {
        let list = receivers.withValue { state -> [BackgroundUploadReceiver] in
            if state.list.isEmpty { state.held.append(outcome) }
            return state.list
        }
        list.forEach { $0.completed(outcome) }
    }
}

/// Opens the system's background session; `nil` where background sessions are not Apple's
/// (swift-corelibs-foundation declares them but cannot run them).
private func openBackgroundSession(identifier: String, sharedContainerIdentifier: String?,
                                   completed: @escaping @Sendable (String, Int?, [String: String], String?) -> Void,
                                   finished: @escaping @Sendable () -> Void) -> URLSessionBackgroundUploads.Calls? {
    var upload: (@Sendable (URL, String, [(String, String)], URL, String) -> Bool)?
    var pending: (@Sendable (@escaping @Sendable ([String]) -> Void) -> Void)?
    var cancel: (@Sendable (String) -> Void)?
    #if canImport(Darwin)
    let configuration = URLSessionConfiguration.background(withIdentifier: identifier)
    // Relaunch the app in the background when uploads end, so their outcomes are read.
    configuration.sessionSendsLaunchEvents = true
    // The system otherwise waits for good conditions (power, Wi-Fi) before sending.
    configuration.isDiscretionary = false
    // An app extension's uploads are read from its app group's container.
    configuration.sharedContainerIdentifier = sharedContainerIdentifier
    let delegate = BackgroundSessionDelegate(completed: completed, finished: finished)
    let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
    upload = { url, method, headers, file, label in
        var request = URLRequest(url: url)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let task = session.uploadTask(with: request, fromFile: file)
        // The label comes back with the task in a later launch: the ledger's key.
        task.taskDescription = label
        task.resume()
        return true
    }
    pending = { answer in
        session.getAllTasks { tasks in answer(tasks.filter { $0.state != .completed }.compactMap(\.taskDescription)) }
    }
    cancel = { label in session.getAllTasks { tasks in tasks.first { $0.taskDescription == label }?.cancel() } }
    #endif
    guard let upload, let pending, let cancel else { return nil }
    return URLSessionBackgroundUploads.Calls(upload: upload, pending: pending, cancel: cancel,
                                             onMain: { DispatchQueue.main.async(execute: $0) })
}

#if canImport(Darwin)
/// The session's delegate, reporting in plain values. `@unchecked`: its properties are
/// constants, and `URLSession` calls it on its own serial queue.
private final class BackgroundSessionDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let completed: @Sendable (String, Int?, [String: String], String?) -> Void
    private let finished: @Sendable () -> Void

    init(completed: @escaping @Sendable (String, Int?, [String: String], String?) -> Void, finished: @escaping @Sendable () -> Void) {
        self.completed = completed
        self.finished = finished
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let label = task.taskDescription else { return }
        if let error {
            completed(label, nil, [:], error.localizedDescription)
        } else if let http = task.response as? HTTPURLResponse {
            var headers: [String: String] = [:]
            for (key, value) in http.allHeaderFields {
                if let key = key as? String, let value = value as? String { headers[key] = value }
            }
            completed(label, http.statusCode, headers, nil)
        } else {
            completed(label, nil, [:], "no HTTP response")
        }
    }

    func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {
        // Every event the system held for the session was delivered: the app may be suspended.
        finished()
    }
}
#endif
