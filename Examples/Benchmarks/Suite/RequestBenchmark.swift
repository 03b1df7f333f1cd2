import ConvertSwiftSDK
import Foundation

extension Benchmarks {
    /// What a server's request asks of the SDK, without the HTTP: a context loaded for the
    /// visitor with the request's attributes, the location set, one experience decided and the
    /// features listed. New visitors (ids never seen) and returning ones (the same ids again),
    /// alternating in rounds, so neither gains from a warmer machine.
    static func request(_ w: Workload, iterations: Int) async throws {
        let sdk = ConvertSwiftSDK(configData: w.configData,
                                  configuration: ConvertConfiguration(sdkKey: "", networkTracking: false, persistence: .memory),
                                  logSink: SilentLogSink())
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
        for round in 0..<rounds {
            let ids = (0..<perRound).map { "\(w.visitorPrefix)request-\(round)-\($0)" }
            var start = ContinuousClock.now
            for id in ids { answered &+= await serve(id) }
            fresh += ContinuousClock.now - start
            start = ContinuousClock.now
            for id in ids { answered &+= await serve(id) }
            returning += ContinuousClock.now - start
        }
        precondition(answered > 0)
        let requests = Double(rounds * perRound)
        emit(["bench": "request", "requests": .number(requests),
              "new_ns_per_request": rounded(nanoseconds(fresh) / requests),
              "returning_ns_per_request": rounded(nanoseconds(returning) / requests)])
    }
}
