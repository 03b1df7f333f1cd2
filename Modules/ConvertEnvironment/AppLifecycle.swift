/// A transition of an app's life the SDK reacts to.
public enum AppLifecycleEvent: String, Sendable, Hashable, CaseIterable {
    /// The app is in the foreground and receiving events (launched, or back from the background).
    case didBecomeActive
    /// The app is about to stop receiving events: an interruption, or on the way to the background.
    case willResignActive
    /// The app is in the background; the system may suspend it once the time it grants runs out.
    case didEnterBackground
    /// The process is about to end; the system gives it a few seconds at most.
    case willTerminate
}

/// Time the system grants an app to finish work after it goes to the background.
///
/// ``end()`` gives the time back; call it once the work is done. The grant may be taken back
/// earlier: then the source calls the `expired` closure handed to
/// ``AppLifecycleSource/beginBackgroundTime(expired:)``, and the work must stop at once.
public struct BackgroundTimeGrant: Sendable {
    private let release: @Sendable () -> Void

    /// A grant given back by `release` (called at most once by ``end()``'s callers).
    public init(release: @escaping @Sendable () -> Void) {
        self.release = release
    }

    /// A grant with nothing to give back: a platform that does not suspend apps.
    public static let unlimited = BackgroundTimeGrant(release: {})

    /// Gives the time back to the system.
    public func end() { release() }
}

/// Tells the SDK how the app's life goes: UIKit's, AppKit's or WatchKit's notifications on
/// Apple platforms, a test double anywhere.
///
/// Implementation requirements: after ``observe(_:)`` the source calls the handler for every
/// transition, in order, from any thread, until ``cancel()``; after ``cancel()`` it never
/// calls it again.
public protocol AppLifecycleSource: Sendable {
    /// Starts calling `handler` for each transition.
    func observe(_ handler: @escaping @Sendable (AppLifecycleEvent) -> Void)
    /// Stops calling the handler.
    func cancel()
    /// Asks the system for time to finish work in the background; `expired` is called, at most
    /// once, when the system takes the time back before ``BackgroundTimeGrant/end()``.
    func beginBackgroundTime(expired: @escaping @Sendable () -> Void) -> BackgroundTimeGrant
}
