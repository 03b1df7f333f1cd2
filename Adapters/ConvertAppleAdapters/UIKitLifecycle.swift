// UIKit apps: iOS, iPadOS, tvOS, visionOS, Mac Catalyst (watchOS has UIKit but no UIApplication).
#if canImport(UIKit) && !os(watchOS)
import ConvertEnvironment
import Foundation
import UIKit

extension NotificationLifecycleSource {
    /// UIApplication's notifications, with background time from `beginBackgroundTask`. Make it
    /// on the main actor (at launch): UIApplication belongs to it.
    @MainActor
    public static func uiKit(center: NotificationCenter = .default) -> NotificationLifecycleSource {
        NotificationLifecycleSource(center: center, names: [
            (UIApplication.didBecomeActiveNotification, .didBecomeActive),
            (UIApplication.willResignActiveNotification, .willResignActive),
            (UIApplication.didEnterBackgroundNotification, .didEnterBackground),
            (UIApplication.willTerminateNotification, .willTerminate),
        ], backgroundTime: { expired in
            // "Call this method as early as possible before starting your task" (UIApplication
            // docs): the observer asks on didEnterBackground, before its flush starts. The
            // expiration handler runs on the main thread shortly before the time runs out; the
            // task must be ended there or the system kills the app.
            let task = onMain {
                UIApplication.shared.beginBackgroundTask(withName: "Convert tracking flush") { expired() }
            }
            guard task != .invalid else { return .unlimited }
            return BackgroundTimeGrant { onMain { UIApplication.shared.endBackgroundTask(task) } }
        })
    }
}

/// Runs `body` on the main thread: at once when already there (notifications are posted there).
private func onMain<Value: Sendable>(_ body: @MainActor () -> Value) -> Value {
    if Thread.isMainThread { return MainActor.assumeIsolated(body) }
    return DispatchQueue.main.sync { MainActor.assumeIsolated(body) }
}
#endif
