import ConvertEnvironment
import ConvertSynchronization
import Foundation

/// An ``AppLifecycleSource`` reading a `NotificationCenter`: each named notification stands for
/// one transition. The UIKit, AppKit and WatchKit sources are this with their frameworks' names
/// and ways to ask for background time; the mapping itself is plain Foundation, so it is tested
/// on every platform.
public final class NotificationLifecycleSource: AppLifecycleSource {
    /// The observer tokens. `@unchecked`: `NotificationCenter` tokens are opaque objects the
    /// center itself synchronizes; they are only stored and handed back to it.
    private struct Tokens: @unchecked Sendable {
        var list: [any NSObjectProtocol] = []
    }

    private let center: NotificationCenter
    private let names: [(Notification.Name, AppLifecycleEvent)]
    private let backgroundTime: @Sendable (@escaping @Sendable () -> Void) -> BackgroundTimeGrant
    private let tokens = Locked(Tokens())

    /// A source turning `names` posted on `center` into their transitions; `backgroundTime`
    /// asks the system for time after backgrounding (no grant is needed by default).
    public init(center: NotificationCenter = .default, names: [(Notification.Name, AppLifecycleEvent)],
                backgroundTime: @escaping @Sendable (@escaping @Sendable () -> Void) -> BackgroundTimeGrant = { _ in .unlimited }) {
        self.center = center
        self.names = names
        self.backgroundTime = backgroundTime
    }

    deinit { cancel() }

    public func observe(_ handler: @escaping @Sendable (AppLifecycleEvent) -> Void) {
        // `queue: nil` runs the handler on the posting thread, at once: UIKit posts on the main
        // thread before the app is suspended, and a hop to another queue could run too late.
        let added = names.map { name, event in
            center.addObserver(forName: name, object: nil, queue: nil) { _ in handler(event) }
        }
        tokens.withValue { $0.list += added }
    }

    public func cancel() {
        let removed = tokens.withValue { tokens in
            defer { tokens.list = [] }
            return tokens.list
        }
        for token in removed { center.removeObserver(token) }
    }

    public func beginBackgroundTime(expired: @escaping @Sendable () -> Void) -> BackgroundTimeGrant {
        backgroundTime(expired)
    }
}
