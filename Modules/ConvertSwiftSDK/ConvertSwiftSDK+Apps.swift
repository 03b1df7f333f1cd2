@_exported import ConvertAppLifecycle
import ConvertAppleAdapters
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
        let wiring = AppWiring.platform(configuration)
        self.init(configuration: configuration, ports: .live(configuration, logSink: logSink, app: wiring))
        if wiring.lifecycle != nil || wiring.built.value != nil {
            connectApp(lifecycle: wiring.lifecycle, backgroundDelivery: wiring.built.value, options: options)
        }
    }
}

/// The Apple adapters an app start wires, none where the frameworks are missing.
final class AppWiring: Sendable {
    let lifecycle: (any AppLifecycleSource)?
    let visitorIdStore: (any VisitorIdStore)?
    let uploads: (@Sendable () -> any BackgroundUploadSession)?
    /// The background delivery `ConvertPorts.live(_:logSink:directData:transport:visitorStore:app:)` built.
    let built = Locked<BackgroundTrackingDelivery?>(nil)

    init(lifecycle: (any AppLifecycleSource)?, visitorIdStore: (any VisitorIdStore)?,
         uploads: (@Sendable () -> any BackgroundUploadSession)?) {
        self.lifecycle = lifecycle
        self.visitorIdStore = visitorIdStore
        self.uploads = uploads
    }

    /// A delivery through the background session, when there is one.
    func backgroundDelivery(endpoint: TrackingEndpoint, configuration: ConvertConfiguration, ledger: any ByteStore,
                            log: SDKLog) -> BackgroundTrackingDelivery? {
        guard let uploads else { return nil }
        let delivery = BackgroundTrackingDelivery(
            session: uploads(), endpoint: endpoint,
            options: TrackingQueueOptions(batchSize: configuration.eventsBatchSize, requestTimeout: .milliseconds(configuration.requestTimeoutMs)),
            ledger: ledger, log: log)
        built.set(delivery)
        return delivery
    }

    /// The platform's adapters.
    @MainActor
    static func platform(_ configuration: ConvertConfiguration) -> AppWiring {
        var lifecycle: (any AppLifecycleSource)?
        var ids: (any VisitorIdStore)?
        var uploads: (@Sendable () -> any BackgroundUploadSession)?
        #if canImport(UIKit) && !os(watchOS)
        lifecycle = NotificationLifecycleSource.uiKit()
        #elseif canImport(AppKit) && !targetEnvironment(macCatalyst)
        lifecycle = NotificationLifecycleSource.appKit()
        #elseif os(watchOS) && canImport(WatchKit)
        lifecycle = NotificationLifecycleSource.watchKit()
        #endif
        #if canImport(Security)
        ids = KeychainVisitorIdStore()
        #endif
        #if canImport(Darwin)
        // Only where events are journaled: the ledger and the journal together make a later
        // launch deliver the rest and repeat no more than the batch on the wire.
        if configuration.persistence == .file, !configuration.sdkKey.isEmpty {
            let directory = configuration.storageDirectory ?? FileStorage.defaultDirectory(for: configuration.sdkKey)
            let key = String(configuration.sdkKey.map { $0.isLetter || $0.isNumber ? $0 : "-" })
            let identifier = "com.convert.sdk.tracking." + key
            uploads = { URLSessionBackgroundUploads(identifier: identifier, bodies: directory.appendingPathComponent("uploads")) }
        }
        #endif
        _ = configuration
        return AppWiring(lifecycle: lifecycle, visitorIdStore: ids, uploads: uploads)
    }
}
