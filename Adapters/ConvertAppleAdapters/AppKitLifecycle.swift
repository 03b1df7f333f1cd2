// macOS apps (Mac Catalyst apps are UIKit's).
#if canImport(AppKit) && !targetEnvironment(macCatalyst)
import AppKit
#endif
import ConvertEnvironment
import Foundation

extension NotificationLifecycleSource {
    /// NSApplication's notifications; `nil` where AppKit is missing. A Mac app is not suspended
    /// when it goes out of sight, so leaving the foreground (switching apps, minimising,
    /// hiding) stands for the background; the time asked for keeps App Nap from slowing the
    /// flush.
    @MainActor
    public static func appKit(center: NotificationCenter = .default) -> NotificationLifecycleSource? {
        var names: [Notification.Name] = []
        var activity: (@Sendable () -> ActivityToken)?
        var endActivity: (@Sendable (ActivityToken) -> Void)?
        #if canImport(AppKit) && !targetEnvironment(macCatalyst)
        names = [NSApplication.didBecomeActiveNotification, NSApplication.willResignActiveNotification,
                 NSApplication.didResignActiveNotification, NSApplication.didHideNotification,
                 NSApplication.willTerminateNotification]
        // "Begin an activity … to prevent App Nap" (ProcessInfo docs); the system never takes
        // it back, so `expired` is never called.
        activity = {
            ActivityToken(ProcessInfo.processInfo.beginActivity(options: .userInitiatedAllowingIdleSystemSleep,
                                                                reason: "Delivering tracking events"))
        }
        endActivity = { ProcessInfo.processInfo.endActivity($0.token) }
        #endif
        guard let activity, let endActivity, names.count == 5 else { return nil }
        return appKit(center: center, names: names) { _ in
            let token = activity()
            return BackgroundTimeGrant { endActivity(token) }
        }
    }

    /// The AppKit source over `names` (didBecomeActive, willResignActive, didResignActive,
    /// didHide, willTerminate): resigning active and hiding both stand for the background.
    package static func appKit(center: NotificationCenter, names: [Notification.Name],
                               backgroundTime: @escaping @Sendable (@escaping @Sendable () -> Void) -> BackgroundTimeGrant)
        -> NotificationLifecycleSource {
        NotificationLifecycleSource(
            center: center,
            names: Array(zip(names, [.didBecomeActive, .willResignActive, .didEnterBackground, .didEnterBackground, .willTerminate])),
            backgroundTime: backgroundTime)
    }
}

/// An App Nap activity's token. `@unchecked`: an opaque object only handed back to
/// `endActivity`, which is safe from any thread.
struct ActivityToken: @unchecked Sendable {
    let token: any NSObjectProtocol
    init(_ token: any NSObjectProtocol) { self.token = token }
}
