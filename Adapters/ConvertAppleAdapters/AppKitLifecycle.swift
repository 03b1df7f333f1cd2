// macOS apps (Mac Catalyst apps are UIKit's).
#if canImport(AppKit) && !targetEnvironment(macCatalyst)
import AppKit
import ConvertEnvironment
import Foundation

extension NotificationLifecycleSource {
    /// NSApplication's notifications. A Mac app is not suspended when it goes out of sight, so
    /// hiding stands for the background; the time asked for keeps App Nap from slowing the flush.
    @MainActor
    public static func appKit(center: NotificationCenter = .default) -> NotificationLifecycleSource {
        NotificationLifecycleSource(center: center, names: [
            (NSApplication.didBecomeActiveNotification, .didBecomeActive),
            (NSApplication.willResignActiveNotification, .willResignActive),
            (NSApplication.didHideNotification, .didEnterBackground),
            (NSApplication.willTerminateNotification, .willTerminate),
        ], backgroundTime: { _ in
            // "Begin an activity … to prevent App Nap" (ProcessInfo docs); the system never takes
            // it back, so `expired` is never called.
            let activity = ActivityToken(ProcessInfo.processInfo.beginActivity(
                options: .userInitiatedAllowingIdleSystemSleep, reason: "Delivering tracking events"))
            return BackgroundTimeGrant { ProcessInfo.processInfo.endActivity(activity.token) }
        })
    }
}

/// The activity token. `@unchecked`: an opaque object only handed back to `endActivity`, which
/// is safe from any thread.
private struct ActivityToken: @unchecked Sendable {
    let token: any NSObjectProtocol
    init(_ token: any NSObjectProtocol) { self.token = token }
}
#endif
