// watchOS apps (WatchKit exists on iOS too, for other purposes).
#if os(watchOS) && canImport(WatchKit)
import ConvertEnvironment
import Foundation
import WatchKit

extension NotificationLifecycleSource {
    /// WKApplication's notifications (watchOS has no termination notification), with background
    /// time from `performExpiringActivity`. Make it on the main actor: the names belong to it.
    @MainActor
    public static func watchKit(center: NotificationCenter = .default) -> NotificationLifecycleSource {
        NotificationLifecycleSource(center: center, names: [
            (WKApplication.didBecomeActiveNotification, .didBecomeActive),
            (WKApplication.willResignActiveNotification, .willResignActive),
            (WKApplication.didEnterBackgroundNotification, .didEnterBackground),
        ], backgroundTime: { expired in
            // The activity lasts while its block runs, on a queue of the system's: the block waits
            // until the grant ends. When the system takes the time back it calls the block again
            // with `true`, which must return at once; that call releases the waiting one too.
            let done = DispatchSemaphore(value: 0)
            ProcessInfo.processInfo.performExpiringActivity(withReason: "Delivering tracking events") { isExpired in
                guard isExpired else { return done.wait() }
                expired()
                done.signal()
            }
            return BackgroundTimeGrant { done.signal() }
        })
    }
}
#endif
