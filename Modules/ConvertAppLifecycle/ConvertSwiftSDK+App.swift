import ConvertCore
import ConvertEnvironment
import ConvertQueue
import ConvertSynchronization

/// What ties an SDK to an app: the observer of its lifecycle and its background delivery.
/// ``ConvertSwiftSDK/connectApp(lifecycle:backgroundDelivery:options:)`` makes one and keeps it
/// for as long as the SDK lives.
public final class AppConnection: Sendable {
    private let observer: AppLifecycleObserver?
    let background: BackgroundTrackingDelivery?

    fileprivate init(observer: AppLifecycleObserver?, background: BackgroundTrackingDelivery?) {
        self.observer = observer
        self.background = background
    }

    /// Stops reacting to the app's lifecycle; background completion handlers are still taken.
    public func disconnect() {
        observer?.cancel()
    }
}

/// The connections of live SDKs. An SDK is a plain class built by the core, so the app side
/// is kept beside it rather than in it; an SDK's entry is dropped, and its connection ended,
/// when the SDK is released.
private let connections = Locked<[ObjectIdentifier: (sdk: WeakSDK, connection: AppConnection)]>([:])

extension ConvertSwiftSDK {
    /// Connects the SDK to the app it runs in: `lifecycle` tells it the app's transitions (it
    /// flushes in the time granted on background, refreshes an old config on return, flushes
    /// briefly before termination), and `backgroundDelivery`, the delivery its tracking queue was
    /// built on, takes the handlers of ``handleEventsForBackgroundURLSession(identifier:completionHandler:)``.
    /// A second call replaces the first connection.
    @discardableResult
    public func connectApp(lifecycle: (any AppLifecycleSource)?, backgroundDelivery: BackgroundTrackingDelivery? = nil,
                           options: AppOptions = AppOptions()) -> AppConnection {
        let observer = lifecycle.map { AppLifecycleObserver(sdk: self, source: $0, options: options, background: backgroundDelivery) }
        let connection = AppConnection(observer: observer, background: backgroundDelivery)
        let id = ObjectIdentifier(self)
        let replaced = connections.withValue { table in
            defer { table[id] = (WeakSDK(self), connection) }
            return table[id]?.connection
        }
        replaced?.disconnect()
        // Only this connection's entry goes: a later call replaced it (and ended it) otherwise.
        whenReleased { [weak connection] in
            let dropped = connections.withValue { table -> AppConnection? in
                guard let connection, let entry = table[id], entry.connection === connection else { return nil }
                table[id] = nil
                return entry.connection
            }
            dropped?.disconnect()
        }
        return connection
    }

    /// The app's connection, when ``connectApp(lifecycle:backgroundDelivery:options:)`` made one.
    var appConnection: AppConnection? {
        connections.withValue { table in
            guard let entry = table[ObjectIdentifier(self)], entry.sdk.sdk === self else { return nil }
            return entry.connection
        }
    }

    /// Forward the system's call for a background session's events here (from
    /// `application(_:handleEventsForBackgroundURLSession:completionHandler:)`). When
    /// `identifier` names the SDK's background session, `completionHandler` runs once the
    /// session's events are handled, on the main thread, so the system can suspend the app
    /// again sooner; otherwise (no background session, as on Linux, or another session) it runs
    /// at once. It runs exactly once either way. Forwarding is optional: events are not lost
    /// without it.
    public func handleEventsForBackgroundURLSession(identifier: String, completionHandler: @escaping () -> Void) {
        let handler = SystemHandler(run: completionHandler)
        if let background = appConnection?.background,
           background.handleEvents(forSession: identifier, completionHandler: { handler.run() }) {
            return
        }
        completionHandler()
    }
}

/// The system's completion handler. `@unchecked`: it comes from the main thread and the
/// background session runs it there again (a handler for no session of ours runs at once,
/// on the caller's thread).
private struct SystemHandler: @unchecked Sendable {
    let run: () -> Void
}
