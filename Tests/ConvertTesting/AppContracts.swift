import ConvertEnvironment
import ConvertStorage
import ConvertSynchronization
import ConvertTransport
import Foundation

private func require(_ condition: Bool, _ message: @autoclosure () -> String) throws {
    if !condition { throw ContractViolation(message()) }
}

/// Behaviour every ``AppLifecycleSource`` must show; `post` makes the platform announce a
/// transition (posts UIKit's notification, say), `events` are those the platform has.
public enum AppLifecycleSourceContract {
    /// Checks a source from `make`.
    public static func verify(make: () -> any AppLifecycleSource, events: [AppLifecycleEvent] = AppLifecycleEvent.allCases,
                              post: (AppLifecycleEvent) -> Void) throws {
        let source = make()
        let seen = Locked<[AppLifecycleEvent]>([])
        source.observe { event in seen.withValue { $0.append(event) } }
        for event in events { post(event) }
        try require(seen.value == events, "each transition must reach the handler once, in order: \(seen.value)")
        let grant = source.beginBackgroundTime(expired: {})
        grant.end()
        source.cancel()
        for event in events { post(event) }
        try require(seen.value == events, "no transition may reach the handler after cancel: \(seen.value)")
    }
}

/// Behaviour every ``BackgroundUploadSession`` must show. `launch` opens the session (as a new
/// launch would, same identifier each time); `settle` lets the system finish what it holds,
/// answered 200 by the server; `kill`, when given, ends the launch (the next `launch` must get
/// the outcomes of uploads that ended meanwhile).
public enum BackgroundUploadSessionContract {
    /// Checks the session; `url` is where requests go.
    public static func verify(url: URL, launch: () -> any BackgroundUploadSession, settle: () async -> Void,
                              kill: (() -> Void)? = nil) async throws {
        let session = launch()
        let outcomes = Locked<[BackgroundUploadCompletion]>([])
        session.setReceiver(BackgroundUploadReceiver(completed: { outcome in outcomes.withValue { $0.append(outcome) } },
                                                     finishedEvents: {}))
        let request = HTTPRequest(method: .post, url: url, headers: [("Content-Type", "application/json")], body: Data("{}".utf8))
        try session.upload(request, label: "first")
        try session.upload(request, label: "second")
        try require(await session.pendingLabels() == ["first", "second"], "started uploads must be pending")
        session.cancel(label: "second")
        await settle()
        let labels = outcomes.value.map(\.label).sorted()
        try require(labels == ["first", "second"], "each upload must report exactly once, labelled: \(labels)")
        try require(outcomes.value.first { $0.label == "first" }?.response?.status == 200, "the answered upload carries its answer")
        try require(outcomes.value.first { $0.label == "second" }?.response == nil, "the cancelled upload reports a failure")
        try require(await session.pendingLabels().isEmpty, "settled uploads are not pending")

        guard let kill else { return }
        try session.upload(request, label: "across")
        kill()
        await settle()
        let next = launch()
        let later = Locked<[BackgroundUploadCompletion]>([])
        next.setReceiver(BackgroundUploadReceiver(completed: { outcome in later.withValue { $0.append(outcome) } },
                                                  finishedEvents: {}))
        try require(later.value.map(\.label) == ["across"], "an outcome after the launch ended must reach the next launch: \(later.value)")
        try require(outcomes.value.count == 2, "a killed launch must hear nothing more")
    }
}

/// Behaviour every ``VisitorIdStore`` must show: `make` returns a store over the same kept state
/// each time, as a new launch or a second SDK instance would (a new `FileByteStore` on the
/// same directory, the same Keychain item).
public enum VisitorIdStoreContract {
    /// Checks the stores from `make`; the kept state must start empty.
    public static func verify(make: () throws -> any VisitorIdStore) throws {
        let first = try make()
        try require(first.loadVisitorId() == nil, "a fresh store must hold no id")
        first.saveVisitorId("3f1c2f4e-0000-4000-8000-000000000001")
        try require(first.loadVisitorId() == "3f1c2f4e-0000-4000-8000-000000000001", "an id must read back")
        let second = try make()
        try require(second.loadVisitorId() == "3f1c2f4e-0000-4000-8000-000000000001",
                    "an id must be the same for another instance over the same state (a relaunch)")
        second.saveVisitorId("3f1c2f4e-0000-4000-8000-000000000002")
        try require(try make().loadVisitorId() == "3f1c2f4e-0000-4000-8000-000000000002", "saving again must replace the id")
        DispatchQueue.concurrentPerform(iterations: 64) { index in
            if index.isMultiple(of: 2) { second.saveVisitorId("id-\(index % 4)") } else { _ = second.loadVisitorId() }
        }
        let settled = try make().loadVisitorId()
        try require(settled == "id-0" || settled == "id-2", "concurrent saves must leave one whole id: \(settled ?? "nil")")
    }
}
