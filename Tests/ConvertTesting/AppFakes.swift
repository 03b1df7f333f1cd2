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
        var refuseNext = false
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
        let (number, refused) = state.withValue { state in
            state.begun += 1
            state.expirations[state.begun] = expired
            defer { state.refuseNext = false }
            return (state.begun, state.refuseNext)
        }
        // As watchOS does: a refusal is told at once, before the grant is even returned.
        if refused { expired() }
        return BackgroundTimeGrant { [weak self] in self?.ended(number) }
    }

    /// The system refuses the next grant: its `expired` closure runs before it is returned.
    public func refuseNextGrant() {
        state.withValue { $0.refuseNext = true }
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
        var openedWhileAlive = 0
        var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Locked(State())

    /// A system holding nothing.
    public init() {}

    /// The session named `identifier` for the current launch (what creating a background
    /// `URLSession` with that identifier does).
    public func session(identifier: String) -> FakeBackgroundUploadSession {
        let session = FakeBackgroundUploadSession(identifier: identifier, system: self)
        state.withValue { state in
            if state.sessions[identifier] != nil { state.openedWhileAlive += 1 }
            state.sessions[identifier] = session
        }
        return session
    }

    /// How many sessions were opened with the identifier of one still alive in the same launch
    /// (unsafe with `URLSession`: `NSURLSession.h`).
    public var openedWhileAlive: Int { state.value.openedWhileAlive }

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

/// UIKit's background tasks with a main thread the test runs by hand: ``begin(expiration:)`` and
/// ``end(_:)`` stand for `beginBackgroundTask` and `endBackgroundTask`, ``onMain(_:)`` queues
/// work for the main thread, ``runMain()`` runs what is queued, ``expire()`` is the system
/// running the expiration handler there. It records whether each task ended before its
/// expiration handler returned (the system kills an app otherwise).
public final class FakeBackgroundTasks: Sendable {
    private struct State {
        var expirations: [Int: @Sendable () -> Void] = [:]
        var ended: [Int: Int] = [:]
        var expiring: Int?
        var endedWhileExpiring: Set<Int> = []
        var queue: [@Sendable () -> Void] = []
        var onMain = false
        var next = 0
    }

    private let state = Locked(State())

    /// No task begun.
    public init() {}

    /// Begins a task (on the main thread).
    public func begin(expiration: @escaping @Sendable () -> Void) -> Int? {
        state.withValue { state in
            state.next += 1
            state.expirations[state.next] = expiration
            return state.next
        }
    }

    /// Ends a task (on the main thread).
    public func end(_ id: Int) {
        state.withValue { state in
            state.ended[id, default: 0] += 1
            if state.expiring == id { state.endedWhileExpiring.insert(id) }
        }
    }

    /// Whether the caller stands on the main thread.
    public var isMainThread: Bool { state.value.onMain }

    /// Queues `work` for the main thread.
    public func onMain(_ work: @escaping @Sendable () -> Void) {
        state.withValue { $0.queue.append(work) }
    }

    /// How much work waits for the main thread.
    public var queued: Int { state.value.queue.count }

    /// Runs `body` as the main thread.
    public func asMain(_ body: () -> Void) {
        state.withValue { $0.onMain = true }
        body()
        state.withValue { $0.onMain = false }
    }

    /// Runs the queued work, as the main thread.
    public func runMain() {
        asMain {
            while let work = state.withValue({ $0.queue.isEmpty ? nil : $0.queue.removeFirst() }) { work() }
        }
    }

    /// The system takes the latest task's time back: its expiration handler runs on the main thread.
    public func expire() {
        let latest = state.withValue { state -> (Int, (@Sendable () -> Void)?) in
            state.expiring = state.next
            return (state.next, state.expirations[state.next])
        }
        asMain { latest.1?() }
        state.withValue { $0.expiring = nil }
    }

    /// How many times each task was ended, by number (1 for the first).
    public var endings: [Int: Int] { state.value.ended }

    /// The tasks ended before their expiration handler returned.
    public var endedInTime: Set<Int> { state.value.endedWhileExpiring }
}

/// A Keychain item for one id, with Security's status codes: ``lock()`` makes every call fail
/// with `errSecInteractionNotAllowed` (a device before its first unlock), ``failNextReads(_:)``
/// fails the next reads only.
public final class FakeKeychain: Sendable {
    private let state = Locked<(data: Data?, locked: Bool, failing: Int, reads: Int)>((nil, false, 0, 0))

    /// An empty item; `id` stored when given.
    public init(id: String? = nil) {
        state.withValue { $0.data = id.map { Data($0.utf8) } }
    }

    /// `SecItemCopyMatching` on the item.
    public func read() -> (status: Int32, data: Data?) {
        state.withValue { state in
            state.reads += 1
            if state.locked || state.failing > 0 {
                state.failing = max(0, state.failing - 1)
                return (-25308, nil)
            }
            return state.data.map { (0, $0) } ?? (-25300, nil)
        }
    }

    /// `SecItemAdd`, or `SecItemUpdate` when the item exists.
    public func write(_ data: Data) -> Int32 {
        state.withValue { state in
            if state.locked { return -25308 }
            state.data = data
            return 0
        }
    }

    /// The stored id.
    public var id: String? { state.value.data.flatMap { String(data: $0, encoding: .utf8) } }

    /// How many reads were made.
    public var reads: Int { state.value.reads }

    /// Locks (`true`) or unlocks the item.
    public func lock(_ locked: Bool = true) { state.withValue { $0.locked = locked } }

    /// The next `count` reads fail.
    public func failNextReads(_ count: Int) { state.withValue { $0.failing = count } }
}
