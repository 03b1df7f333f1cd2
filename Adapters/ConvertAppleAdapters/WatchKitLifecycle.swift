// watchOS apps (WatchKit exists on iOS too, for other purposes).
#if os(watchOS) && canImport(WatchKit)
import WatchKit
#endif
import ConvertEnvironment
import Foundation

extension NotificationLifecycleSource {
    /// WKApplication's notifications (watchOS has no termination notification), with background
    /// time from `performExpiringActivity`; `nil` elsewhere. Make it on the main actor: the
    /// names belong to it.
    @MainActor
    public static func watchKit(center: NotificationCenter = .default) -> NotificationLifecycleSource? {
        var names: [Notification.Name] = []
        var perform: (@Sendable (@escaping @Sendable (Bool) -> Void) -> Void)?
        #if os(watchOS) && canImport(WatchKit)
        names = [WKApplication.didBecomeActiveNotification, WKApplication.willResignActiveNotification,
                 WKApplication.didEnterBackgroundNotification]
        perform = { block in ProcessInfo.processInfo.performExpiringActivity(withReason: "Delivering tracking events", using: block) }
        #endif
        guard let perform, names.count == 3 else { return nil }
        return NotificationLifecycleSource(
            center: center, names: Array(zip(names, [.didBecomeActive, .willResignActive, .didEnterBackground])),
            backgroundTime: BackgroundTime.expiringActivity(perform: perform))
    }
}
