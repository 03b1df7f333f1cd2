import ConvertEnvironment
import ConvertSynchronization
import ConvertTransport
import Foundation

/// An ``AppLifecycleSource`` driven by the test: ``send(_:)`` is a transition, ``expire()`` the
/// system taking back the background time it granted.
public final class FakeAppLifecycle: AppLifecycleSource, Sendable {
    private struct State {
        var handler: (@Sendable (AppLifecycleEvent) -> Void)?
        var expirations: [Int: @Sendable () -> Void] = [:]
        var begun = 0
        var ended: [Int: Int] = [:]
        var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Locked(State())

    /// A source with no observer yet.
    public init() {}

    public func observe(_ handler: @escaping @Sendable (AppLifecycleEvent) -> Void) {
        state.withValue { $0.handler = handler }
    }

    public func cancel() {
        state.withValue { $0.handler = nil }
    }

    public func beginBackgroundTime(expired: @escaping @Sendable () -> Void) -> BackgroundTimeGrant {
        let number = state.withValue { state in
            state.begun += 1
            state.expirations[state.begun] = expired
            return state.begun
        }
        return BackgroundTimeGrant { [weak self] in self?.ended(number) }
    }

    /// Posts `event` to the observer, on the caller's thread.
    public func send(_ event: AppLifecycleEvent) {
        state.value.handler?(event)
    }

    /// Whether an observer is attached.
    public var isObserved: Bool { state.value.handler != nil }

    /// How many grants were asked for.
    public var grantsBegun: Int { state.value.begun }

    /// How many times each grant was ended, by grant number (1 for the first).
    public var endings: [Int: Int] { state.value.ended }

    /// The system takes back the latest grant's time: its `expired` closure runs.
    public func expire() {
        let expired = state.withValue { $0.expirations[$0.begun] }
        expired?()
    }

    /// Returns once `count` grants have been ended.
    public func grantsEnded(_ count: Int) async {
        await withCheckedContinuation { continuation in
            let ready = state.withValue { state -> Bool in
                if state.ended.count >= count { return true }
                state.waiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private func ended(_ number: Int) {
        let ready = state.withValue { state -> [CheckedContinuation<Void, Never>] in
            state.ended[number, default: 0] += 1
            let (ready, waiting) = (state.waiters.filter { $0.count <= state.ended.count },
                                    state.waiters.filter { $0.count > state.ended.count })
            state.waiters = waiting
            return ready.map(\.continuation)
        }
        ready.forEach { $0.resume() }
    }
}

/// The system's background transfer daemon and the server behind it, for
/// ``BackgroundUploadSession`` tests: uploads outlive the process that started them
/// (``killApp()``), outcomes reach the session of the next launch, the server records what it
/// received. ``session(identifier:)`` is one launch's session.
public final class FakeBackgroundUploadSystem: Sendable {
    /// An upload the system holds.
    public struct Upload: Sendable {
        /// The session's identifier.
        public let identifier: String
        /// The label it was started with.
        public let label: String
        /// The request as handed over.
        public let request: HTTPRequest
    }

    private struct State {
        var uploads: [Upload] = []
        var received: [HTTPRequest] = []
        var sessions: [String: FakeBackgroundUploadSession] = [:]
        var held: [String: [BackgroundUploadCompletion]] = [:]
        var handlersRun = 0
        var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Locked(State())

    /// A system holding nothing.
    public init() {}

    /// The session named `identifier` for the current launch (what creating a background
    /// `URLSession` with that identifier does).
    public func session(identifier: String) -> FakeBackgroundUploadSession {
        let session = FakeBackgroundUploadSession(identifier: identifier, system: self)
        state.withValue { $0.sessions[identifier] = session }
        return session
    }

    /// The process ends: no session listens any more; uploads go on.
    public func killApp() {
        let sessions = state.withValue { state in
            defer { state.sessions = [:] }
            return Array(state.sessions.values)
        }
        sessions.forEach { $0.detach() }
    }

    /// The uploads held now, oldest first.
    public var uploads: [Upload] { state.value.uploads }

    /// What the server received, in order.
    public var received: [HTTPRequest] { state.value.received }

    /// How many system completion handlers the sessions ran.
    public var handlersRun: Int { state.value.handlersRun }

    /// Returns once `count` uploads are held.
    public func uploadsHeld(_ count: Int) async {
        await withCheckedContinuation { continuation in
            let ready = state.withValue { state -> Bool in
                if state.uploads.count >= count { return true }
                state.waiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Sends the oldest held upload: the server gets it when `status` is given and answers
    /// it; `nil` is a failure with no answer, after the body reached the server when
    /// `reachedServer` (the answer was lost). The outcome goes to the listening session, or is
    /// held for the next launch's.
    public func completeOldest(status: Int? = 200, reachedServer: Bool = false) {
        let (upload, receiver) = state.withValue { state -> (Upload?, FakeBackgroundUploadSession?) in
            guard !state.uploads.isEmpty else { return (nil, nil) }
            let upload = state.uploads.removeFirst()
            if status != nil || reachedServer { state.received.append(upload.request) }
            return (upload, state.sessions[upload.identifier])
        }
        guard let upload else { return }
        let outcome = status.map { BackgroundUploadCompletion(label: upload.label, response: HTTPResponse(status: $0)) }
            ?? BackgroundUploadCompletion(label: upload.label, failure: "network connection lost")
        if let receiver, receiver.report(outcome) { return }
        state.withValue { $0.held[upload.identifier, default: []].append(outcome) }
    }

    /// The system has delivered every event for `identifier`'s session.
    public func finishEvents(identifier: String) {
        state.value.sessions[identifier]?.finishEvents()
    }

    fileprivate func hold(_ upload: Upload) {
        let ready = state.withValue { state -> [CheckedContinuation<Void, Never>] in
            state.uploads.append(upload)
            let ready = state.waiters.filter { $0.count <= state.uploads.count }
            state.waiters.removeAll { $0.count <= state.uploads.count }
            return ready.map(\.continuation)
        }
        ready.forEach { $0.resume() }
    }

    fileprivate func takeHeld(_ identifier: String) -> [BackgroundUploadCompletion] {
        state.withValue { $0.held.removeValue(forKey: identifier) ?? [] }
    }

    fileprivate func pending(_ identifier: String) -> Set<String> {
        Set(state.value.uploads.filter { $0.identifier == identifier }.map(\.label))
    }

    fileprivate func cancel(_ identifier: String, label: String) {
        let cancelled = state.withValue { state -> Bool in
            guard let index = state.uploads.firstIndex(where: { $0.identifier == identifier && $0.label == label }) else { return false }
            state.uploads.remove(at: index)
            return true
        }
        guard cancelled else { return }
        let outcome = BackgroundUploadCompletion(label: label, failure: "cancelled")
        if let session = state.value.sessions[identifier], session.report(outcome) { return }
        state.withValue { $0.held[identifier, default: []].append(outcome) }
    }

    fileprivate func handlerRan() {
        state.withValue { $0.handlersRun += 1 }
    }
}

/// One launch's view of a ``FakeBackgroundUploadSystem`` session.
public final class FakeBackgroundUploadSession: BackgroundUploadSession, Sendable {
    public let identifier: String
    private let system: FakeBackgroundUploadSystem
    private let receiver = Locked<(current: BackgroundUploadReceiver?, alive: Bool)>((nil, true))

    fileprivate init(identifier: String, system: FakeBackgroundUploadSystem) {
        self.identifier = identifier
        self.system = system
    }

    public func setReceiver(_ receiver: BackgroundUploadReceiver) {
        self.receiver.withValue { $0.current = receiver }
        system.takeHeld(identifier).forEach(receiver.completed)
    }

    public func upload(_ request: HTTPRequest, label: String) throws {
        guard receiver.value.alive else { throw TransportError.cancelled }
        system.hold(.init(identifier: identifier, label: label, request: request))
    }

    public func pendingLabels() async -> Set<String> { system.pending(identifier) }

    public func cancel(label: String) { system.cancel(identifier, label: label) }

    public func runSystemCompletionHandler(_ handler: @escaping @Sendable () -> Void) {
        system.handlerRan()
        handler()
    }

    fileprivate func detach() {
        receiver.withValue { $0 = (nil, false) }
    }

    /// Reports `outcome` when this launch listens; `false` otherwise.
    fileprivate func report(_ outcome: BackgroundUploadCompletion) -> Bool {
        guard let current = receiver.withValue({ $0.alive ? $0.current : nil }) else { return false }
        current.completed(outcome)
        return true
    }

    fileprivate func finishEvents() {
        receiver.value.current?.finishedEvents()
    }
}
