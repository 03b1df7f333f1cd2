import ConvertSwiftSDK
import Logging
import ServiceLifecycle

/// Runs a `ConvertSwiftSDK` as a swift-service-lifecycle `Service`: waits for its first config
/// at start, and shuts it down (tracking delivered) when the service group shuts down.
///
/// ``run()``:
/// 1. waits for readiness at most `readinessTimeout` (10 s by default). When no config came, it
///    logs why (`sdk.lastConfigFailure`) and goes on: the SDK keeps fetching by itself, and
///    decisions answer their defaults until a config arrives.
/// 2. stays running (the SDK keeps its config fresh on its own) until graceful shutdown or
///    cancellation, running the `whileRunning` tasks (a metrics reporter's `run`, say).
/// 3. then calls `sdk.shutdown(timeout: shutdownTimeout)`: tracking stops taking events and
///    delivers what is pending until the deadline; the SDK logs the report. The `whileRunning`
///    tasks are cancelled after it, so they see the final counters, then the `closers` run, in
///    order (`{ redis.close() }`), each error logged.
///
/// A graceful shutdown requested before ``run()`` starts skips the wait for readiness and shuts
/// the SDK down at once. Cancellation shuts it down the same way: the flush runs in a task of
/// its own, so it gets its whole deadline even though the caller is cancelled.
///
/// ## Where it goes in a ServiceGroup
///
/// A `ServiceGroup` starts its services in the order of its `services` array and shuts them down
/// in reverse order, one at a time, waiting for each one's `run()` to return before signalling
/// the next. So list the Convert service **after** the log, metrics and tracing backends it
/// writes to and **before** the HTTP server that decides with it:
///
/// ```swift
/// let convert = ConvertService(sdk: sdk, logger: logger, closers: [{ redis.close() }])
/// let group = ServiceGroup(services: [otel, convert, httpServer],   // shutdown: httpServer, convert, otel
///                          gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
/// try await group.run()
/// ```
///
/// At SIGTERM the HTTP server stops taking requests first (no more decisions or conversions),
/// then the SDK delivers its pending events and the closers run, and only then are the log and
/// metrics backends shut down, so the shutdown report and the last metrics still get out. The
/// group's `maximumGracefulShutdownDuration`, if set, must leave room for `shutdownTimeout`.
public struct ConvertService: Service {
    /// The SDK the service runs.
    public let sdk: ConvertSwiftSDK
    /// Where the service logs readiness problems and failing closers.
    public let logger: Logger
    /// How long ``run()`` waits for the first config before going on without it.
    public let readinessTimeout: Duration
    /// How long the shutdown delivers pending tracking events.
    public let shutdownTimeout: Duration
    private let whileRunning: [@Sendable () async -> Void]
    private let closers: [@Sendable () async throws -> Void]

    /// A service running `sdk`.
    ///
    /// - Parameters:
    ///   - sdk: the SDK; the service shuts it down.
    ///   - logger: where readiness problems and failing closers are logged (the shutdown report is
    ///     the SDK's line, in the SDK's log: start the SDK with the same logger).
    ///   - readinessTimeout: the longest wait for the first config; 10 s by default.
    ///   - shutdownTimeout: the deadline for delivering pending events at shutdown; 5 s by default.
    ///   - whileRunning: tasks run while the service runs, cancelled after the SDK's shutdown
    ///     (`MetricsReporter.run` from ConvertMetrics); each must return once cancelled.
    ///   - closers: run in order after the SDK's shutdown, whatever ended the service
    ///     (`{ redis.close() }`); a closer's error is logged and the next one runs.
    public init(sdk: ConvertSwiftSDK, logger: Logger = Logger(label: "convert"),
                readinessTimeout: Duration = .seconds(10), shutdownTimeout: Duration = .seconds(5),
                whileRunning: [@Sendable () async -> Void] = [],
                closers: [@Sendable () async throws -> Void] = []) {
        self.sdk = sdk
        self.logger = logger
        self.readinessTimeout = readinessTimeout
        self.shutdownTimeout = shutdownTimeout
        self.whileRunning = whileRunning
        self.closers = closers
    }

    /// Waits for readiness, holds until graceful shutdown or cancellation, then shuts the SDK
    /// down and runs the closers. Returns once all of that is done; it does not throw.
    public func run() async throws {
        if !Task.isShuttingDownGracefully && !Task.isCancelled {
            await waitForReadiness()
        }
        await withTaskGroup(of: Void.self) { group in
            for task in whileRunning {
                group.addTask { await task() }
            }
            // Returns at graceful shutdown (at once when it was requested before run()), throws
            // at cancellation: either way it is time to stop.
            try? await gracefulShutdown()
            await stop()
            group.cancelAll()
        }
        await close()
    }

    private func waitForReadiness() async {
        let sdk = sdk, timeout = readinessTimeout
        do {
            try await cancelWhenGracefulShutdown { try await sdk.ready(timeout: timeout) }
            logger.debug("Convert SDK ready", metadata: ["convert.status": "\(sdk.status)"])
        } catch ConvertError.readyTimedOut {
            logger.warning("Convert SDK not ready within \(timeout); decisions answer their defaults until a config arrives",
                           metadata: ["convert.cause": .string(sdk.lastConfigFailure ?? "no config received yet")])
        } catch ConvertError.cancelled {
            // Shutdown or cancellation while waiting: stopping follows.
        } catch is CancellationError {
        } catch {
            logger.error("Convert SDK cannot become ready: \(error); decisions answer their defaults",
                         metadata: ["convert.cause": .string(sdk.lastConfigFailure ?? "\(error)")])
        }
    }

    /// Shuts the SDK down in a task of its own, so a cancelled caller still gets the deadline.
    /// The report is the SDK's own log line (through the SDK's log sink), logged once.
    private func stop() async {
        let sdk = sdk, timeout = shutdownTimeout
        _ = await Task { await sdk.shutdown(timeout: timeout) }.value
    }

    private func close() async {
        let closers = closers, logger = logger
        await Task {
            for (index, closer) in closers.enumerated() {
                do {
                    try await closer()
                } catch {
                    logger.error("Convert service closer \(index + 1) of \(closers.count) failed: \(error)")
                }
            }
        }.value
    }
}

extension ConvertService: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The service in one short line, as `ServiceGroup`'s log names it: its timeouts, not its
    /// logger or closures.
    public var description: String {
        "ConvertService(readinessTimeout: \(readinessTimeout), shutdownTimeout: \(shutdownTimeout))"
    }

    /// The same as ``description``.
    public var debugDescription: String { description }

    /// The timeouts alone, for `dump` and debuggers.
    public var customMirror: Mirror {
        Mirror(self, children: ["readinessTimeout": readinessTimeout, "shutdownTimeout": shutdownTimeout],
               displayStyle: .struct)
    }
}
