/// How one background upload ended, told to the ``BackgroundUploadReceiver`` of the session,
/// in the launch that started it or in a later one.
public struct BackgroundUploadCompletion: Sendable, Hashable {
    /// The label the upload was started with.
    public let label: String
    /// The server's answer; `nil` when none came (see ``failure``).
    public let response: HTTPResponse?
    /// Why no answer came (the connection broke, the upload was cancelled); `nil` with a response.
    public let failure: String?

    /// An upload answered by the server.
    public init(label: String, response: HTTPResponse) {
        self.label = label
        self.response = response
        failure = nil
    }

    /// An upload that got no answer.
    public init(label: String, failure: String) {
        self.label = label
        response = nil
        self.failure = failure
    }
}

/// Where a ``BackgroundUploadSession`` reports: each completed upload, and the end of a batch
/// of system events for the session (after which the app's completion handler may run).
public struct BackgroundUploadReceiver: Sendable {
    /// Told each upload's outcome, once.
    public let completed: @Sendable (BackgroundUploadCompletion) -> Void
    /// Told that the system has delivered every event it held for the session.
    public let finishedEvents: @Sendable () -> Void

    /// A receiver of completions and of the end of the system's events.
    public init(completed: @escaping @Sendable (BackgroundUploadCompletion) -> Void,
                finishedEvents: @escaping @Sendable () -> Void) {
        self.completed = completed
        self.finishedEvents = finishedEvents
    }
}

/// Uploads the system carries on while the app is suspended, or after its process ended: a
/// background `URLSession` on Apple platforms, a test double anywhere.
///
/// Implementation requirements: ``upload(_:label:)`` returns once the system holds the request
/// (its body written where the system reads it) and never waits for the answer. Each upload's
/// outcome reaches the receiver exactly once, labelled as started: in this launch, or in a later
/// one once a session with the same ``identifier`` has a receiver. ``pendingLabels()`` names
/// the uploads the system still holds, whichever launch started them.
public protocol BackgroundUploadSession: Sendable {
    /// The system's name for the session; the app is told it when the system wakes it for the
    /// session's events.
    var identifier: String { get }
    /// Sets where outcomes go; outcomes held from an earlier launch follow.
    func setReceiver(_ receiver: BackgroundUploadReceiver)
    /// Hands `request` to the system; `label` comes back with its outcome.
    func upload(_ request: HTTPRequest, label: String) throws
    /// The labels of the uploads the system still holds.
    func pendingLabels() async -> Set<String>
    /// Cancels the upload labelled `label`; its outcome (a failure) still reaches the receiver.
    func cancel(label: String)
    /// Runs the completion handler the system gave the app for this session, where the platform
    /// wants it run (the main thread on Apple platforms).
    func runSystemCompletionHandler(_ handler: @escaping @Sendable () -> Void)
}
