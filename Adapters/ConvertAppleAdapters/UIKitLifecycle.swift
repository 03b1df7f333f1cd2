// UIKit apps: iOS, iPadOS, tvOS, visionOS, Mac Catalyst (watchOS has UIKit but no UIApplication).
#if canImport(UIKit) && !os(watchOS)
import UIKit
#endif
import ConvertEnvironment
import Foundation

extension NotificationLifecycleSource {
    /// UIApplication's notifications, with background time from `beginBackgroundTask`; `nil`
    /// where there is no UIApplication (Linux, AppKit's macOS, watchOS). Make it on the main
    /// actor (at launch): UIApplication belongs to it.
    @MainActor
    public static func uiKit(center: NotificationCenter = .default) -> NotificationLifecycleSource? {
        // Only the framework's calls are platform-only; what the SDK does with them is below.
        var names: [Notification.Name] = []
        var begin: (@Sendable (@escaping @Sendable () -> Void) -> Int?)?
        var end: (@Sendable (Int) -> Void)?
        #if canImport(UIKit) && !os(watchOS)
        names = [UIApplication.didBecomeActiveNotification, UIApplication.willResignActiveNotification,
                 UIApplication.didEnterBackgroundNotification, UIApplication.willTerminateNotification]
        begin = { expiration in
            MainActor.assumeIsolated {
                let task = UIApplication.shared.beginBackgroundTask(withName: "Convert tracking flush") { expiration() }
                return task == .invalid ? nil : task.rawValue
            }
        }
        end = { task in
            MainActor.assumeIsolated { UIApplication.shared.endBackgroundTask(UIBackgroundTaskIdentifier(rawValue: task)) }
        }
        #endif
        guard let begin, let end, names.count == 4 else { return nil }
        return uiKit(center: center, names: names, begin: begin, end: end)
    }

    /// The UIKit source over `names` (didBecomeActive, willResignActive, didEnterBackground,
    /// willTerminate), with `begin` and `end` standing for `beginBackgroundTask` and
    /// `endBackgroundTask` (see ``BackgroundTime/tasks(begin:end:isMainThread:onMain:)``).
    package static func uiKit(center: NotificationCenter, names: [Notification.Name],
                              begin: @escaping @Sendable (@escaping @Sendable () -> Void) -> Int?,
                              end: @escaping @Sendable (Int) -> Void,
                              isMainThread: @escaping @Sendable () -> Bool = { Thread.isMainThread },
                              onMain: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void = { DispatchQueue.main.async(execute: $0) })
        -> NotificationLifecycleSource {
        NotificationLifecycleSource(
            center: center, names: Array(zip(names, [.didBecomeActive, .willResignActive, .didEnterBackground, .willTerminate])),
            backgroundTime: BackgroundTime.tasks(begin: begin, end: end, isMainThread: isMainThread, onMain: onMain))
    }
}
