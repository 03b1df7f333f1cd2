import ConvertSwiftSDK
import Dispatch
import Vapor

extension Application {
    /// The app's Convert SDK and the middleware that gives each request its context.
    ///
    /// ```swift
    /// app.convert.use(ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "10035569/10034190")))
    /// app.middleware.use(app.convert.middleware())
    /// app.get("pricing") { req in
    ///     try req.convert.variation(forExperience: "pricing-test")?.keyOrId ?? "control"
    /// }
    /// ```
    public var convert: Convert { Convert(application: self) }

    /// The app's Convert SDK, kept in the application's storage.
    public struct Convert: Sendable {
        let application: Application

        struct Key: StorageKey {
            typealias Value = ConvertSwiftSDK
        }

        /// The SDK given to ``use(_:shutdownTimeout:)``; `nil` before.
        public var sdkIfConfigured: ConvertSwiftSDK? { application.storage[Key.self] }

        /// The SDK given to ``use(_:shutdownTimeout:)``; stops the program when there is none.
        public var sdk: ConvertSwiftSDK {
            guard let sdk = sdkIfConfigured else {
                fatalError("Convert is not configured: call app.convert.use(sdk) first")
            }
            return sdk
        }

        /// Keeps `sdk` for the app, and shuts it down when the app shuts down: the HTTP server
        /// stops first (so requests in flight finish their tracking), then the SDK delivers its
        /// pending events for up to `shutdownTimeout` (keep it below the orchestrator's grace
        /// period) and writes visitor data.
        public func use(_ sdk: ConvertSwiftSDK, shutdownTimeout: Duration = .seconds(5)) {
            precondition(sdkIfConfigured == nil, "app.convert.use(_:) was already called")
            application.storage[Key.self] = sdk
            application.lifecycle.use(ConvertLifecycleHandler(sdk: sdk, timeout: shutdownTimeout))
        }

        /// A middleware giving each request the context of the visitor in its cookie (see
        /// ``ConvertMiddleware``).
        public func middleware(cookie: VisitorCookie = VisitorCookie(),
                               attributes: @escaping @Sendable (Request) -> [String: JSONValue] = { _ in [:] }) -> ConvertMiddleware {
            ConvertMiddleware(sdk: sdk, cookie: cookie, attributes: attributes)
        }
    }
}

/// Shuts the SDK down when the application shuts down.
struct ConvertLifecycleHandler: LifecycleHandler {
    let sdk: ConvertSwiftSDK
    let timeout: Duration

    func shutdownAsync(_ application: Application) async {
        // Vapor stops the server after the lifecycle handlers; stopping it twice is harmless.
        if application.running != nil { await application.server.shutdown() }
        let report = await sdk.shutdown(timeout: timeout)
        application.logger.info("Convert SDK shut down: \(report)")
    }

    func shutdown(_ application: Application) {
        if application.running != nil { application.server.shutdown() }
        let sdk = sdk, timeout = timeout
        let done = DispatchSemaphore(value: 0)
        Task {
            let report = await sdk.shutdown(timeout: timeout)
            application.logger.info("Convert SDK shut down: \(report)")
            done.signal()
        }
        done.wait()
    }
}
