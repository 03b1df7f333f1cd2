import ConvertEnvironment
import ConvertSynchronization
import Foundation

/// The SDK's half of Apple's ways to ask for background time: what it does with UIKit's
/// background tasks and watchOS's expiring activities. The frameworks' calls are handed in
/// (`UIKitLifecycle.swift`, `WatchKitLifecycle.swift`), so this is compiled and tested on
/// every platform.
package enum BackgroundTime {
    /// UIKit's background tasks: `begin` starts one (`nil` when the system refuses) with the
    /// handler the system runs on the main thread shortly before the time runs out; `end` ends
    /// one. Both are called on the main thread: at once when the request comes from there
    /// (notifications are posted there), through `onMain` otherwise.
    ///
    /// The task is ended exactly once: by the expiration handler itself, before it returns
    /// (the system kills an app whose handler returns with the task still running), or,
    /// when the work ends first, on the main thread later, never waited for.
    package static func tasks(begin: @escaping @Sendable (_ expiration: @escaping @Sendable () -> Void) -> Int?,
                              end: @escaping @Sendable (Int) -> Void,
                              isMainThread: @escaping @Sendable () -> Bool = { Thread.isMainThread },
                              onMain: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void = { DispatchQueue.main.async(execute: $0) })
        -> @Sendable (@escaping @Sendable () -> Void) -> BackgroundTimeGrant {
        { expired in
            let task = BackgroundTask(end: end)
            let start: @Sendable () -> Void = {
                guard let id = begin({
                    expired()
                    task.finish()
                }) else {
                    // Refused: the work must not count on time it does not have.
                    expired()
                    return
                }
                task.began(id)
            }
            if isMainThread() { start() } else { onMain(start) }
            return BackgroundTimeGrant { onMain { task.finish() } }
        }
    }

    /// watchOS's expiring activity: `perform` hands the block to the system, which runs it on
    /// a queue of its own with `false` (the activity lasts while the block runs, so it waits for
    /// the grant's end) and with `true` when it takes the time back, or at once, and only then,
    /// when it refuses it. `expired` is told first, at most once, before anything else.
    package static func expiringActivity(perform: @escaping @Sendable (_ block: @escaping @Sendable (Bool) -> Void) -> Void)
        -> @Sendable (@escaping @Sendable () -> Void) -> BackgroundTimeGrant {
        { expired in
            let activity = ExpiringActivity(expired: expired)
            perform { isExpired in activity.run(expired: isExpired) }
            return BackgroundTimeGrant { activity.end() }
        }
    }
}

/// One UIKit background task, ended once on the main thread.
private final class BackgroundTask: Sendable {
    private let state = Locked<(id: Int?, ended: Bool)>((nil, false))
    private let end: @Sendable (Int) -> Void

    init(end: @escaping @Sendable (Int) -> Void) { self.end = end }

    /// The task began (on the main thread); ended at once when its end came first.
    func began(_ id: Int) {
        let endNow = state.withValue { state -> Bool in
            if state.ended { return true }
            state.id = id
            return false
        }
        if endNow { end(id) }
    }

    /// Ends the task, if it began and is not ended yet (on the main thread).
    func finish() {
        let id = state.withValue { state -> Int? in
            defer { state = (nil, true) }
            return state.id
        }
        if let id { end(id) }
    }
}

/// One watchOS expiring activity: the waiting block, released by the grant's end or the expiry.
private final class ExpiringActivity: Sendable {
    private let state = Locked<(ended: Bool, told: Bool)>((false, false))
    private let done = DispatchSemaphore(value: 0)
    private let expired: @Sendable () -> Void

    init(expired: @escaping @Sendable () -> Void) { self.expired = expired }

    func run(expired isExpired: Bool) {
        guard isExpired else {
            if !state.value.ended { done.wait() }
            return
        }
        let tell = state.withValue { state -> Bool in
            defer { state.told = true }
            return !state.told && !state.ended
        }
        if tell { expired() }
        done.signal()
    }

    func end() {
        state.withValue { $0.ended = true }
        done.signal()
    }
}
