import ConvertStorage

// What the backend's calls meet, as the shared store should take it.
extension RedisVisitorBackend {
    /// A call on a cluster that failed at its master while other masters answer (that master
    /// unreachable, out of time, or replaced in the map by its replica since the call was routed), or
    /// whose slot a master said it does not serve for now (`CLUSTERDOWN`, `TRYAGAIN`, a `MOVED`
    /// or `ASK` after the one followed): one part of the cluster is down or moving (a master
    /// before its replica's promotion, a promoted replica not yet serving, a slot in migration),
    /// so the shared store decides this call's visitors locally and keeps calling for the others.
    public struct ClusterPartUnavailable: VisitorBackendPartError, Sendable, Hashable, CustomStringConvertible {
        /// What the call met.
        public let error: RedisError
        public var description: String {
            if case .serverError = error { return "a Redis Cluster slot is not served for now (\(error))" }
            return "a Redis Cluster master cannot be reached while the others answer (\(error))"
        }
    }

    /// A cluster call's failure as the shared store should take it: a part's failure when the
    /// call found its node unreachable, out of time or no longer a master, while another master answered;
    /// else its error, for ``scoped(_:)`` to look at.
    static func classified(_ failure: RedisClusterClient.CallFailure) -> any Error {
        failure.isPart ? ClusterPartUnavailable(error: failure.error) : failure.error
    }

    /// `error` as the shared store should take it: on a cluster, a slot not served for now is a
    /// part's failure; anything else as it is (a connection's failure was classified by the call
    /// that met it, ``classified(_:)``; an error reply such as `OOM` or `READONLY` is an
    /// ordinary failure).
    func scoped(_ error: any Error) -> any Error {
        guard isCluster, case .serverError(let message)? = error as? RedisError,
              Self.isSlotUnserved(message) else { return error }
        return ClusterPartUnavailable(error: .serverError(message: message))
    }

    /// A `WRONGTYPE` answer as what it is: a record holding another kind of value.
    static func recordError(_ error: any Error, key: String) -> any Error {
        if case .serverError(let message)? = error as? RedisError, isWrongType(message) {
            return InvalidRecord(key: key, reason: "it holds another kind of value (\(message))")
        }
        return error
    }

    /// Whether an error reply says the key holds another kind of value: no retry writes it.
    static func isWrongType(_ message: String) -> Bool { message.hasPrefix("WRONGTYPE") }

    /// The error of a reply that refused a write a retry may store, `nil` for a reply that is no
    /// error or a `WRONGTYPE` one.
    static func refusal(_ reply: Result<RESPValue, RedisError>) -> RedisError? {
        guard case .failure(let error) = reply else { return nil }
        if case .serverError(let message) = error, isWrongType(message) { return nil }
        return error
    }

    /// Whether an error reply says the key's slot is not served where the command went, for now:
    /// the cluster is down or reconfiguring (`CLUSTERDOWN`, `TRYAGAIN`), or the slot moved again
    /// after the redirection the cluster client followed (`MOVED`, `ASK`).
    static func isSlotUnserved(_ message: String) -> Bool {
        message.hasPrefix("CLUSTERDOWN") || message.hasPrefix("TRYAGAIN") || message.hasPrefix("MOVED ") || message.hasPrefix("ASK ")
    }
}
