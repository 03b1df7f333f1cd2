import ConvertSwiftSDK
import CoreMetrics
import Metrics

/// Reports the SDK's delivery counters and config status with swift-metrics, polling them every
/// `interval`.
///
/// | metric | type | from |
/// |---|---|---|
/// | `convert_events_sent_total` | counter | events the tracking API acknowledged |
/// | `convert_events_dropped_total` | counter | events refused: queue at capacity, or shut down |
/// | `convert_events_rejected_total` | counter | events the tracking API refused on their own |
/// | `convert_events_retried_total` | counter | event deliveries attempted again |
/// | `convert_delivery_failures_total` | counter | failed delivery requests |
/// | `convert_delivery_requests_total` | counter | delivery requests made, answered or not |
/// | `convert_delivery_duration_seconds` | timer | per report, the mean time of the delivery requests made since the previous one |
/// | `convert_queue_depth` | gauge | events waiting or in flight |
/// | `convert_config_age_seconds` | gauge | since the config was last received or confirmed (not recorded without a config) |
/// | `convert_config_fetch_failures_total` | counter | failed attempts to get a config |
/// | `convert_status` | gauge, `status` = `starting`, `ready`, `stale`, `failed` | 1 for the SDK's status, 0 for the others |
///
/// Counters grow by what the SDK counted since the previous report. The delivery timer gets one
/// value per report that saw requests: their mean duration (the SDK keeps totals, not each one).
///
/// Run ``run()`` in the app's lifecycle (`ConvertService(whileRunning:)` in a ServiceGroup,
/// `app.convert.use(sdk, whileRunning:)` in Vapor), or call ``report()`` from a scheduler of
/// your own; calling it before serving a scrape makes the delivery counters current.
///
/// ```swift
/// let reporter = MetricsReporter(sdk: sdk)
/// let convert = ConvertService(sdk: sdk, whileRunning: [reporter.run])
/// ```
public final class MetricsReporter: Sendable {
    /// The SDK reported on.
    public let sdk: ConvertSwiftSDK
    /// How often ``run()`` reports.
    public let interval: Duration

    private let sent, dropped, rejected, retried, deliveryFailures, deliveryRequests, fetchFailures: Counter
    private let deliveryDuration: Metrics.Timer
    private let queueDepth, configAge: Gauge
    private let statuses: [(name: String, gauge: Gauge)]
    private let previous = Protected(Previous())

    private struct Previous {
        var counters = TrackingCounters()
        var fetchFailures = 0
    }

    /// A reporter on `sdk` every `interval` (10 s by default), through `factory` (the
    /// bootstrapped `MetricsSystem` by default).
    public init(sdk: ConvertSwiftSDK, interval: Duration = .seconds(10), factory: any MetricsFactory = MetricsSystem.factory) {
        self.sdk = sdk
        self.interval = interval
        sent = Counter(label: "convert_events_sent_total", factory: factory)
        dropped = Counter(label: "convert_events_dropped_total", factory: factory)
        rejected = Counter(label: "convert_events_rejected_total", factory: factory)
        retried = Counter(label: "convert_events_retried_total", factory: factory)
        deliveryFailures = Counter(label: "convert_delivery_failures_total", factory: factory)
        deliveryRequests = Counter(label: "convert_delivery_requests_total", factory: factory)
        deliveryDuration = Metrics.Timer(label: "convert_delivery_duration_seconds", factory: factory)
        fetchFailures = Counter(label: "convert_config_fetch_failures_total", factory: factory)
        queueDepth = Gauge(label: "convert_queue_depth", factory: factory)
        configAge = Gauge(label: "convert_config_age_seconds", factory: factory)
        statuses = ["starting", "ready", "stale", "failed"].map {
            ($0, Gauge(label: "convert_status", dimensions: [("status", $0)], factory: factory))
        }
    }

    /// Reports now: counters by what grew since the last report, gauges at their value.
    public func report() {
        let counters = sdk.trackingCounters
        let failures = sdk.configFetchFailures
        let status = sdk.status
        let (before, failuresBefore) = previous.withValue { previous in
            defer { previous = Previous(counters: counters, fetchFailures: failures) }
            return (previous.counters, previous.fetchFailures)
        }
        func grow(_ counter: Counter, _ now: Int, _ then: Int) {
            // A smaller value means a new count (a new sink): all of it is new.
            let delta = now >= then ? now - then : now
            if delta > 0 { counter.increment(by: delta) }
        }
        grow(sent, counters.sent, before.sent)
        grow(dropped, counters.dropped, before.dropped)
        grow(rejected, counters.rejected, before.rejected)
        grow(retried, counters.retried, before.retried)
        grow(deliveryFailures, counters.failedRequests, before.failedRequests)
        grow(deliveryRequests, counters.requests, before.requests)
        let requests = counters.requests - before.requests
        if requests > 0, counters.requestTime >= before.requestTime {
            deliveryDuration.record(duration: (counters.requestTime - before.requestTime) / requests)
        }
        grow(fetchFailures, failures, failuresBefore)
        queueDepth.record(counters.pending)
        if let age = status.configAge {
            configAge.record(Double(age.components.seconds) + Double(age.components.attoseconds) / 1e18)
        }
        let current = status.metricName
        for (name, gauge) in statuses {
            gauge.record(name == current ? 1 : 0)
        }
    }

    /// Reports every ``interval`` until the task is cancelled, then once more, so the last
    /// report sees the SDK's shutdown when the reporter is cancelled after it.
    public func run() async {
        while !Task.isCancelled {
            report()
            try? await Task.sleep(for: interval)
        }
        report()
    }
}

extension SDKStatus {
    /// `starting`, `ready`, `stale` or `failed`: the `status` dimension of `convert_status`.
    public var metricName: String {
        switch self {
        case .starting: "starting"
        case .ready: "ready"
        case .stale: "stale"
        case .failed: "failed"
        }
    }
}
