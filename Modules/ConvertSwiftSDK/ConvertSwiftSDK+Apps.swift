@_exported import ConvertAppLifecycle
import ConvertAppleAdapters
import ConvertFileStorage
import ConvertQueue
import ConvertStorage
import ConvertSynchronization
import ConvertTransport
import Foundation

extension ConvertSwiftSDK {
    /// Starts the SDK for an app. On Apple platforms it follows the app's lifecycle (UIKit's,
    /// AppKit's or WatchKit's notifications: a flush in the time granted on background, a config
    /// refresh on return when it is older than the refresh interval), keeps the auto visitor id
    /// in the Keychain (this device only, never synced), and, with file persistence, delivers
    /// tracking through a background `URLSession` whose events the app forwards to
    /// ``handleEventsForBackgroundURLSession(identifier:completionHandler:)``. Elsewhere it is
    /// ``init(configuration:logSink:)``.
    ///
    /// ```swift
    /// let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "YOUR_SDK_KEY"), app: AppOptions())
    /// ```
    @MainActor
    public convenience init(configuration: ConvertConfiguration, app options: AppOptions,
                            logSink: any LogSink = StandardErrorLogSink()) {
        self.init(configuration: configuration, app: options, platform: .current(options), logSink: logSink)
    }

    /// ``init(configuration:app:logSink:)`` on `platform`'s adapters (a test's fakes).
    package convenience init(configuration: ConvertConfiguration, app options: AppOptions, platform: AppPlatform,
                             logSink: any LogSink = StandardErrorLogSink()) {
        let wiring = AppWiring(configuration, platform: platform)
        self.init(configuration: configuration, ports: .live(configuration, logSink: logSink, app: wiring))
        if platform.lifecycle != nil || wiring.built.value != nil {
            connectApp(lifecycle: platform.lifecycle, backgroundDelivery: wiring.built.value, options: options)
        }
    }
}

/// The adapters an app start wires: Apple's where their frameworks are, none elsewhere.
package struct AppPlatform: Sendable {
    /// The app's lifecycle.
    package var lifecycle: (any AppLifecycleSource)?
    /// Where the auto visitor id is kept, in place of the storage directory.
    package var visitorIdStore: (any VisitorIdStore)?
    /// Opens the background session named `identifier` with request bodies under `bodies`.
    package var openSession: (@Sendable (_ identifier: String, _ bodies: URL) -> (any BackgroundUploadSession)?)?

    /// A platform of the given adapters.
    package init(lifecycle: (any AppLifecycleSource)? = nil, visitorIdStore: (any VisitorIdStore)? = nil,
                 openSession: (@Sendable (String, URL) -> (any BackgroundUploadSession)?)? = nil) {
        self.lifecycle = lifecycle
        self.visitorIdStore = visitorIdStore
        self.openSession = openSession
    }

    /// This platform's adapters (each factory is `nil` where its framework is missing).
    @MainActor
    static func current(_ options: AppOptions) -> AppPlatform {
        AppPlatform(
            lifecycle: NotificationLifecycleSource.uiKit() ?? NotificationLifecycleSource.appKit() ?? NotificationLifecycleSource.watchKit(),
            visitorIdStore: KeychainVisitorIdStore(),
            openSession: { identifier, bodies in
                URLSessionBackgroundUploads(identifier: identifier, bodies: bodies,
                                            sharedContainerIdentifier: options.sharedContainerIdentifier)
            })
    }
}

/// What an app start builds from its platform for one configuration.
final class AppWiring: Sendable {
    let visitorIdStore: (any VisitorIdStore)?
    let uploads: (@Sendable () -> (any BackgroundUploadSession)?)?
    /// The background delivery `ConvertPorts.live(_:logSink:directData:transport:visitorStore:app:)` built.
    let built = Locked<BackgroundTrackingDelivery?>(nil)

    init(_ configuration: ConvertConfiguration, platform: AppPlatform) {
        visitorIdStore = platform.visitorIdStore
        // Only where events are journaled: the ledger and the journal together make a later
        // launch deliver the rest and repeat no more than the batch on the wire.
        if let open = platform.openSession, configuration.persistence == .file, !configuration.sdkKey.isEmpty {
            let directory = configuration.storageDirectory ?? FileStorage.defaultDirectory(for: configuration.sdkKey)
            let key = String(configuration.sdkKey.map { $0.isLetter || $0.isNumber ? $0 : "-" })
            let identifier = "com.convert.sdk.tracking." + key
            let bodies = directory.appendingPathComponent("uploads")
            uploads = { BackgroundSessions.shared(identifier: identifier) { open(identifier, bodies) } }
        } else {
            uploads = nil
        }
    }

    /// A delivery through the background session, when there is one.
    func backgroundDelivery(endpoint: TrackingEndpoint, configuration: ConvertConfiguration, ledger: any ByteStore,
                            log: SDKLog) -> BackgroundTrackingDelivery? {
        guard let session = uploads?() else { return nil }
        let delivery = BackgroundTrackingDelivery(
            session: session, endpoint: endpoint,
            options: TrackingQueueOptions(batchSize: configuration.eventsBatchSize, requestTimeout: .milliseconds(configuration.requestTimeoutMs)),
            ledger: ledger, log: log)
        built.set(delivery)
        return delivery
    }
}
