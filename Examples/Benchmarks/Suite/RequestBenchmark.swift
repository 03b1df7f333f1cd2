import ConvertSwiftSDK
import Foundation

extension Benchmarks {
    /// What a server's request asks of the SDK, without the HTTP: a context loaded for the
    /// visitor with the request's attributes, the location set, one experience decided and the
    /// features listed. New visitors (ids never seen) and returning ones (the same ids again),
    /// alternating in rounds, so neither gains from a warmer machine.
    ///
    /// With `tracking`, new visitors' bucketing events are queued and delivered, in batches of
    /// the configuration's default size, to a transport that answers 200 at once; the CPU figures
    /// (the whole process's, every thread) then include their delivery, flushed at each round's
    /// end.
    static func request(_ w: Workload, iterations: Int, tracking: Bool = false) async throws {
        let configuration = ConvertConfiguration(sdkKey: "", networkTracking: tracking, persistence: .memory)
        let sdk = ConvertSwiftSDK(configuration: configuration,
                                  ports: .live(configuration, logSink: SilentLogSink(), directData: w.configData,
                                               transport: NoOpTransport()))
        try await sdk.ready()
        func serve(_ visitorId: String) async -> Int {
            let context = await sdk.loadContext(visitorId: visitorId, attributes: w.attributes)
            context.setLocationProperties(w.locationProperties)
            let variation = context.variation(forExperience: w.experienceKey)
            return (variation == nil ? 0 : 1) + context.features().count
        }
        // Rounds of 2,000 visitors: returning ones stay within the in-memory store's 10,000.
        let perRound = min(2_000, max(1, iterations)), rounds = max(1, iterations / perRound)
        var answered = 0
        var fresh = Duration.zero, returning = Duration.zero
        var freshCPU = Duration.zero, returningCPU = Duration.zero
        for round in 0..<rounds {
            let ids = (0..<perRound).map { "\(w.visitorPrefix)request-\(round)-\($0)" }
            var cpu = processCPUTime()
            var start = ContinuousClock.now
            for id in ids { answered &+= await serve(id) }
            fresh += ContinuousClock.now - start
            await sdk.flush()
            freshCPU += processCPUTime() - cpu
            cpu = processCPUTime()
            start = ContinuousClock.now
            for id in ids { answered &+= await serve(id) }
            returning += ContinuousClock.now - start
            await sdk.flush()
            returningCPU += processCPUTime() - cpu
        }
        precondition(answered > 0)
        let requests = Double(rounds * perRound)
        emit(["bench": "request", "requests": .number(requests), "tracking": .bool(tracking),
              "new_ns_per_request": rounded(nanoseconds(fresh) / requests),
              "returning_ns_per_request": rounded(nanoseconds(returning) / requests),
              "new_cpu_ns_per_request": rounded(nanoseconds(freshCPU) / requests),
              "returning_cpu_ns_per_request": rounded(nanoseconds(returningCPU) / requests)])
    }

    /// CPU time the process has used so far, every thread's.
    static func processCPUTime() -> Duration {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return .seconds(Int64(time.tv_sec)) + .nanoseconds(Int64(time.tv_nsec))
    }
}
