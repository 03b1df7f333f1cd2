import ConvertSwiftSDK
import Dispatch
import Foundation
import Vapor

extension Application {
    /// The app's Convert SDK and the middleware that gives each request its context.
    ///
    /// ```swift
    /// app.convert.use(sdk, whileRunning: [reporter.run], closers: [{ try await transport.shutdown() }])
    /// let shop = app.grouped(app.convert.middleware { req in ["mobile": false, "desktop": true, "browser": "FF"] })
    /// shop.get("pricing") { req in
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

        /// The SDK given to ``use(_:shutdownTimeout:whileRunning:closers:)``; `nil` before.
        public var sdkIfConfigured: ConvertSwiftSDK? { application.storage[Key.self] }

        /// The SDK given to ``use(_:shutdownTimeout:whileRunning:closers:)``; stops the program
        /// when there is none.
        public var sdk: ConvertSwiftSDK {
            guard let sdk = sdkIfConfigured else {
                fatalError("Convert is not configured: call app.convert.use(sdk) first")
            }
            return sdk
        }

        /// Keeps `sdk` for the app and runs it in the app's lifecycle: the `whileRunning` tasks
        /// start when the app boots; when the app shuts down the HTTP server stops first (so
        /// requests in flight finish their tracking), then the SDK delivers its pending events
        /// for up to `shutdownTimeout` (keep it below the orchestrator's grace period) and writes
        /// visitor data, then the `whileRunning` tasks are cancelled and awaited (a metrics
        /// reporter's last round sees the shutdown), then the `closers` run in order. The SDK logs
        /// its shutdown report.
        ///
        /// - Parameters:
        ///   - sdk: the SDK; the app shuts it down.
        ///   - shutdownTimeout: the deadline for delivering pending events at shutdown.
        ///   - whileRunning: tasks run from boot to shutdown (`MetricsReporter.run` from
        ///     ConvertMetrics); each must return once cancelled.
        ///   - closers: run in order after the SDK's shutdown (`{ try await transport.shutdown() }`,
        ///     `{ redis.close() }`); an error is logged and the next one runs.
        public func use(_ sdk: ConvertSwiftSDK, shutdownTimeout: Duration = .seconds(5),
                        whileRunning: [@Sendable () async -> Void] = [],
                        closers: [@Sendable () async throws -> Void] = []) {
            precondition(sdkIfConfigured == nil, "app.convert.use(_:) was already called")
            application.storage[Key.self] = sdk
            application.lifecycle.use(ConvertLifecycleHandler(sdk: sdk, timeout: shutdownTimeout, whileRunning: whileRunning,
                                                              closers: closers))
        }

        /// A middleware giving each request the context of the visitor in its cookie (see
        /// ``ConvertMiddleware``). Add it to the routes that decide, with `app.grouped(…)`: routes
        /// outside the group do no Convert work and set no cookie.
        public func middleware(cookie: VisitorCookie = VisitorCookie(),
                               attributes: @escaping @Sendable (Request) -> [String: JSONValue] = { _ in [:] }) -> ConvertMiddleware {
            ConvertMiddleware(sdk: sdk, cookie: cookie, attributes: attributes)
        }
    }
}

/// Runs the SDK in the application's lifecycle: the tasks from boot, the shutdown at the end.
struct ConvertLifecycleHandler: LifecycleHandler {
    let sdk: ConvertSwiftSDK
    let timeout: Duration
    let whileRunning: [@Sendable () async -> Void]
    let closers: [@Sendable () async throws -> Void]
    private let running = Running()

    init(sdk: ConvertSwiftSDK, timeout: Duration, whileRunning: [@Sendable () async -> Void],
         closers: [@Sendable () async throws -> Void]) {
        self.sdk = sdk
        self.timeout = timeout
        self.whileRunning = whileRunning
        self.closers = closers
    }

    /// The `whileRunning` tasks, started once.
    final class Running: @unchecked Sendable {
        private let lock = NSLock()
        private var tasks: [Task<Void, Never>] = []
        private var started = false

        func start(_ bodies: [@Sendable () async -> Void]) {
            lock.withLock {
                guard !started else { return }
                started = true
                tasks = bodies.map { body in Task { await body() } }
            }
        }

        func stop() async {
            let tasks = lock.withLock {
                defer { self.tasks = [] }
                return self.tasks
            }
            for task in tasks { task.cancel() }
            for task in tasks { await task.value }
        }
    }

    func didBoot(_ application: Application) throws {
        running.start(whileRunning)
    }

    func shutdownAsync(_ application: Application) async {
        // Vapor stops the server after the lifecycle handlers; stopping it twice is harmless.
        if application.running != nil { await application.server.shutdown() }
        _ = await sdk.shutdown(timeout: timeout)
        await running.stop()
        for (index, closer) in closers.enumerated() {
            do {
                try await closer()
            } catch {
                application.logger.error("Convert closer \(index + 1) of \(closers.count) failed: \(error)")
            }
        }
    }

    func shutdown(_ application: Application) {
        if application.running != nil { application.server.shutdown() }
        let done = DispatchSemaphore(value: 0)
        let handler = self
        Task {
            // The server is already stopped: the async path's check finds it so.
            await handler.shutdownAsync(application)
            done.signal()
        }
        done.wait()
    }
}
