import ConvertEnvironment
import ConvertSynchronization
import Dispatch
import Foundation

/// A pooled connection handed to one caller. `@unchecked`: a connection is not `Sendable`, but
/// exactly one holder uses it at a time — the caller that took it, or the I/O thread it handed
/// its exchange to — and the pool touches it only while it is parked, under the pool's lock.
struct Lease: @unchecked Sendable {
    let connection: RedisConnection
}

/// What a ``RedisClient`` tells whoever subscribed about the server, as it happens.
package enum RedisClientEvent: Sendable, Hashable {
    /// A call failed on the transport (a refused or broken connection, no reply in time): the
    /// client fails calls at once and probes the server in the background.
    case unavailable(RedisError)
    /// A probe succeeded after the server had been unavailable for this long.
    case available(after: Duration)
    /// A new connection found the data set's marker gone or replaced: the server lost what it
    /// held (restarted without persistence, flushed) since this client last connected.
    case dataLost
}

/// The client's connections, the server's health and the threads that wait for it.
///
/// - Connections are opened by the connector thread, one at a time, never by a caller: a call
///   that needs one waits (within its own deadline) for the next connection to come free or be
///   opened.
/// - A transport failure makes the server *unavailable*: idle connections are closed, waiting
///   calls fail, later calls fail at once, and a background probe (after the reconnect backoff,
///   measured on the injected clock) opens a connection and sends `PING`; its success makes the
///   server available again.
/// - A call runs its exchange on the calling thread and, when the reply is slow, hands it to
///   the I/O thread (`RedisReactor`), which also expires waiting `async` calls at their deadline.
final class RedisPool: Sendable {
    /// Since when the server is unavailable, and when the next probe runs.
    struct Outage {
        var since: Duration
        var failures: Int
        var retryAt: Duration
        var cause: RedisError
    }

    /// A caller waiting for a connection.
    struct Waiter: Sendable {
        let id: UInt64
        let deadline: ContinuousClock.Instant
        /// Whether the I/O thread expires it (an `async` caller); a blocking caller expires itself.
        let expiredByReactor: Bool
        let resume: @Sendable (Result<Lease, RedisError>) -> Void
    }

    /// Commands sent on every new connection after `AUTH` and `SELECT`, and what to do with
    /// their replies.
    struct Setup: Sendable {
        let commands: [RedisCommand]
        let handle: @Sendable ([RESPValue]) -> Void
    }

    private enum Job: Sendable {
        /// A connection for the pool (its slot is counted in `open` already).
        case pool
        /// A probe of an unavailable server: a connection that answers `PING`.
        case probe(@Sendable (Result<Lease, RedisError>) -> Void)
        case stop
    }

    // `@unchecked`: idle connections are not Sendable; they are touched only under the lock.
    private struct State: @unchecked Sendable {
        var idle: [RedisConnection] = []
        /// Connections open, lent out, or being opened for the pool.
        var open = 0
        var waiters: [Waiter] = []
        var nextWaiterId: UInt64 = 0
        var closed = false
        var outage: Outage?
        var probing = false
        var jobs: [Job] = []
        var connectorStarted = false
        var subscribers: [@Sendable (RedisClientEvent) -> Void] = []
        var setups: [(name: String, setup: Setup)] = []
        /// The marker value this client last saw (see ``RedisClient/watchDataSet(markerKey:)``).
        var marker: String?
        /// Moving average of single-command round trips, to decide whether replies are awaited on
        /// the calling thread.
        var roundTrip: Duration = .zero
    }

    let configuration: RedisConfiguration
    private let clock: any SleepClock
    private let backoff: Backoff
    private let state = Locked(State())
    private let jobSignal = DispatchSemaphore(value: 0)
    let reactor: RedisReactor

    /// How long an `async` call waits for its reply on the calling thread before handing the
    /// exchange to the I/O thread (poll's granularity is a millisecond).
    static let callerWait: Duration = .milliseconds(1)
    /// Above this average round trip, `async` calls suspend as soon as their commands are
    /// written: a thread blocked for a slow network's round trip is worth more than the hop.
    static let callerWaitBelow: Duration = .microseconds(250)

    init(configuration: RedisConfiguration, clock: any SleepClock) {
        self.configuration = configuration
        self.clock = clock
        backoff = Backoff(initial: configuration.reconnectBackoffInitial, maximum: configuration.reconnectBackoffMax)
        reactor = RedisReactor()
    }

    var poolSize: Int { max(configuration.poolSize, 1) }

    // MARK: Events and setup

    func subscribe(_ handler: @escaping @Sendable (RedisClientEvent) -> Void) {
        state.withValue { $0.subscribers.append(handler) }
    }

    private func publish(_ event: RedisClientEvent) {
        for subscriber in state.withValue({ $0.subscribers }) { subscriber(event) }
    }

    /// Adds (or replaces, by name) commands sent on every new connection.
    func addSetup(named name: String, _ setup: Setup) {
        state.withValue { state in
            state.setups.removeAll { $0.name == name }
            state.setups.append((name, setup))
        }
    }

    /// Watches `markerKey` on every new connection; publishes ``RedisClientEvent/dataLost`` when
    /// it vanished or was replaced since this client last saw it.
    func watchDataSet(markerKey: String) {
        let token = UUID().uuidString
        addSetup(named: "data-set-marker", Setup(
            commands: [["GET", .key(markerKey)], ["SET", .key(markerKey), .string(token), "NX"], ["GET", .key(markerKey)]],
            handle: { [weak self] replies in
                guard let self, replies.count == 3 else { return }
                let before = replies[0].stringValue, now = replies[2].stringValue
                let lost = self.state.withValue { state -> Bool in
                    defer { if let now { state.marker = now } }
                    guard let known = state.marker else { return false }
                    return before != known
                }
                if lost { self.publish(.dataLost) }
            }))
    }

    /// Whether the server is taken as reachable (no outage).
    var isAvailable: Bool { state.withValue { $0.outage == nil } }

    // MARK: Taking a connection

    enum Checkout {
        case lease(Lease)
        case fail(RedisError)
        case wait
    }

    /// An idle connection if one is sound, a failure while the server is unavailable, else
    /// `wait` (a connection is being opened for this caller when the pool has room).
    func checkoutNow() -> Checkout {
        while true {
            let step = state.withValue { state -> (Checkout, RedisConnection?) in
                if state.closed { return (.fail(.clientClosed), nil) }
                if let outage = state.outage { return (.fail(unavailable(outage)), nil) }
                if let idle = state.idle.popLast() { return (.wait, idle) }
                return (.wait, nil)
            }
            guard case .wait = step.0 else { return step.0 }
            guard let candidate = step.1 else { return .wait }
            if candidate.isReusable { return .lease(Lease(connection: candidate)) }
            // The server closed it (a restart, an idle timeout): drop it, look again.
            candidate.close()
            state.withValue { $0.open -= 1 }
        }
    }

    /// Queues a waiter; hands it a connection at once if one came free meanwhile, and opens a
    /// connection for it when the pool has room.
    func enqueue(deadline: ContinuousClock.Instant, expiredByReactor: Bool,
                 resume: @escaping @Sendable (Result<Lease, RedisError>) -> Void) -> UInt64 {
        while true {
            var immediate: Result<Lease, RedisError>?
            var candidate: RedisConnection?
            var connect = false
            let id = state.withValue { state -> UInt64 in
                state.nextWaiterId += 1
                let id = state.nextWaiterId
                if state.closed {
                    immediate = .failure(.clientClosed)
                } else if let outage = state.outage {
                    immediate = .failure(unavailable(outage))
                } else if let idle = state.idle.popLast() {
                    candidate = idle
                } else {
                    state.waiters.append(Waiter(id: id, deadline: deadline, expiredByReactor: expiredByReactor, resume: resume))
                    if state.open < poolSize {
                        state.open += 1
                        state.jobs.append(.pool)
                        connect = true
                    }
                }
                return id
            }
            if let candidate {
                // One came free since the caller looked: use it if sound, else drop it and look again.
                guard candidate.isReusable else {
                    candidate.close()
                    state.withValue { $0.open -= 1 }
                    continue
                }
                immediate = .success(Lease(connection: candidate))
            }
            if let immediate {
                resume(immediate)
            } else {
                if connect { startConnectorJob() }
                if expiredByReactor { reactor.wake(self) }
            }
            return id
        }
    }

    /// Removes the waiter `id`; `false` when it was already resumed.
    func cancelWaiter(_ id: UInt64) -> Bool {
        state.withValue { state in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return false }
            state.waiters.remove(at: index)
            return true
        }
    }

    /// Fails the waiters the I/O thread expires whose deadline passed; the earliest deadline of
    /// those left.
    func expireWaiters(now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        var expired: [Waiter] = []
        let next = state.withValue { state -> ContinuousClock.Instant? in
            var next: ContinuousClock.Instant?
            state.waiters.removeAll { waiter in
                guard waiter.expiredByReactor else { return false }
                if waiter.deadline <= now {
                    expired.append(waiter)
                    return true
                }
                next = next.map { min($0, waiter.deadline) } ?? waiter.deadline
                return false
            }
            return next
        }
        for waiter in expired { waiter.resume(.failure(poolTimeout())) }
        return next
    }

    func poolTimeout() -> RedisError {
        .timeout(reason: "no pooled connection came free within \(configuration.commandTimeout.wholeMillisecondsRoundedUp) ms "
            + "(\(poolSize) connection\(poolSize == 1 ? "" : "s"))")
    }

    private func unavailable(_ outage: Outage) -> RedisError {
        let wait = max(outage.retryAt - clock.elapsed, .zero)
        return .connectionFailed(reason: "server unavailable, next connect attempt in \(wait.wholeMillisecondsRoundedUp) ms "
            + "(last attempt: \(Self.reason(outage.cause)))")
    }

    // MARK: Giving a connection back

    /// Returns a connection after an exchange: to the first waiter still in time, else to the
    /// idle list; a broken one is dropped, and replaced for waiters that are left.
    func release(_ lease: Lease) {
        let connection = lease.connection
        var handOff: (Waiter, Lease)?
        var expired: [Waiter] = []
        var discard: RedisConnection?
        var connect = false
        let now = ContinuousClock.now
        state.withValue { state in
            guard connection.isOpen, !state.closed, state.outage == nil else {
                discard = connection
                state.open -= 1
                if !state.closed, state.outage == nil, !state.waiters.isEmpty, state.open < poolSize {
                    state.open += 1
                    state.jobs.append(.pool)
                    connect = true
                }
                return
            }
            while !state.waiters.isEmpty {
                let waiter = state.waiters.removeFirst()
                if waiter.deadline <= now {
                    expired.append(waiter)
                    continue
                }
                handOff = (waiter, lease)
                return
            }
            state.idle.append(connection)
        }
        discard?.close()
        for waiter in expired { waiter.resume(.failure(poolTimeout())) }
        if let (waiter, lease) = handOff { waiter.resume(.success(lease)) }
        if connect { startConnectorJob() }
    }

    /// Ends an exchange: the connection back to the pool (or dropped, when the exchange broke
    /// it), and an outage noted when the failure says the server is unreachable.
    func finish(_ lease: Lease, started: ContinuousClock.Instant, result: Result<[RESPValue], RedisError>) {
        release(lease)
        if case .failure(let error) = result, isOutage(error, waited: .now - started) { noteOutage(error) }
    }

    /// Notes how long a single-command exchange took, for ``waitsOnCaller``.
    func noteRoundTrip(_ elapsed: Duration) {
        state.withValue { state in
            state.roundTrip = state.roundTrip == .zero ? elapsed : (state.roundTrip * 7 + elapsed) / 8
        }
    }

    /// Whether an `async` call waits for its reply on the calling thread first.
    var waitsOnCaller: Bool { state.withValue { $0.roundTrip } < Self.callerWaitBelow }

    // MARK: Health

    /// Whether `error`, ending an exchange that waited `waited`, says the server is unreachable:
    /// a refused or broken connection, or no reply in a wait long enough to mean it (a call that
    /// spent its budget waiting for a pooled connection says nothing about the server).
    func isOutage(_ error: RedisError, waited: Duration) -> Bool {
        switch error {
        case .connectionFailed: true
        case .timeout: waited >= configuration.commandTimeout / 2
        default: false
        }
    }

    /// Makes the server unavailable (once per outage): idle connections closed, waiting callers
    /// failed, subscribers told, a probe scheduled.
    func noteOutage(_ error: RedisError) {
        var idle: [RedisConnection] = []
        var waiters: [Waiter] = []
        var startProbe = false
        let began = state.withValue { state -> Bool in
            guard !state.closed, state.outage == nil else { return false }
            let now = clock.elapsed
            state.outage = Outage(since: now, failures: 1, retryAt: now + backoff.delay(afterFailures: 1), cause: error)
            idle = state.idle
            state.idle = []
            state.open -= idle.count
            waiters = state.waiters
            state.waiters = []
            if !state.probing {
                state.probing = true
                startProbe = true
            }
            return true
        }
        guard began else { return }
        idle.forEach { $0.close() }
        for waiter in waiters { waiter.resume(.failure(error)) }
        publish(.unavailable(error))
        if startProbe { Task.detached { [self] in await probeUntilAvailable() } }
    }

    /// Probes the server after each backoff until it answers, then makes it available again.
    private func probeUntilAvailable() async {
        while true {
            guard let retryAt = state.withValue({ state -> Duration? in
                if state.closed || state.outage == nil {
                    state.probing = false
                    return nil
                }
                return state.outage?.retryAt
            }) else { return }
            let wait = retryAt - clock.elapsed
            if wait > .zero { try? await clock.sleep(for: wait) }
            if state.withValue({ $0.closed }) {
                state.withValue { $0.probing = false }
                return
            }
            let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Lease, RedisError>, Never>) in
                let queued = state.withValue { state -> Bool in
                    guard !state.closed else { return false }
                    state.jobs.append(.probe({ continuation.resume(returning: $0) }))
                    return true
                }
                if queued { startConnectorJob() } else { continuation.resume(returning: .failure(.clientClosed)) }
            }
            switch result {
            case .success(let lease):
                let downFor = state.withValue { state -> Duration? in
                    guard !state.closed, let outage = state.outage else { return nil }
                    state.outage = nil
                    state.probing = false
                    state.open += 1
                    return clock.elapsed - outage.since
                }
                guard let downFor else {
                    lease.connection.close()
                    state.withValue { $0.probing = false }
                    return
                }
                release(lease)
                publish(.available(after: downFor))
                return
            case .failure(let error):
                let closed = state.withValue { state -> Bool in
                    guard !state.closed, var outage = state.outage else { return true }
                    outage.failures += 1
                    outage.retryAt = clock.elapsed + backoff.delay(afterFailures: outage.failures)
                    outage.cause = error
                    state.outage = outage
                    return false
                }
                if closed {
                    state.withValue { $0.probing = false }
                    return
                }
            }
        }
    }

    // MARK: The connector thread

    private func startConnectorJob() {
        let start = state.withValue { state -> Bool in
            defer { state.connectorStarted = true }
            return !state.connectorStarted
        }
        if start {
            let thread = Thread { [self] in runConnector() }
            thread.name = "ConvertRedis.connector"
            thread.start()
        }
        jobSignal.signal()
    }

    private func runConnector() {
        while true {
            jobSignal.wait()
            let next = state.withValue { state -> (Job, [(String, Setup)])? in
                guard !state.jobs.isEmpty else { return nil }
                return (state.jobs.removeFirst(), state.setups.map { ($0.name, $0.setup) })
            }
            guard let (job, setups) = next else { continue }
            switch job {
            case .stop:
                return
            case .pool:
                let wanted = state.withValue { state -> Bool in
                    guard state.outage == nil, !state.closed else {
                        state.open -= 1
                        return false
                    }
                    return true
                }
                guard wanted else { continue }
                let result = open(setups, probe: false)
                switch result {
                case .success(let lease):
                    release(lease)
                case .failure(let error):
                    connectFailed(error)
                }
            case .probe(let done):
                done(open(setups, probe: true))
            }
        }
    }

    /// A new connection with every setup run (and `PING` answered, for a probe).
    private func open(_ setups: [(String, Setup)], probe: Bool) -> Result<Lease, RedisError> {
        var commands = setups.flatMap(\.1.commands)
        if probe { commands.append(.ping) }
        do {
            let connection = try RedisConnection(configuration: configuration, setup: commands)
            var replies = connection.setupReplies[...]
            for (_, setup) in setups {
                setup.handle(Array(replies.prefix(setup.commands.count)))
                replies = replies.dropFirst(setup.commands.count)
            }
            if probe, replies.first?.stringValue != "PONG" {
                connection.close()
                return .failure(.protocolError(reason: "PING answered a \(replies.first?.summary ?? "nothing")"))
            }
            return .success(Lease(connection: connection))
        } catch {
            return .failure(error)
        }
    }

    /// A connection for the pool could not be opened: the server is unavailable when the
    /// transport failed; otherwise (a refused `AUTH`, say) the callers waiting are told, unless
    /// other connections may still serve them.
    private func connectFailed(_ error: RedisError) {
        let transport: Bool
        switch error {
        case .connectionFailed, .timeout: transport = true
        default: transport = false
        }
        var waiters: [Waiter] = []
        state.withValue { state in
            state.open -= 1
            if !transport, state.open == 0 {
                waiters = state.waiters
                state.waiters = []
            }
        }
        for waiter in waiters { waiter.resume(.failure(error)) }
        // The callers waiting then get this connect's error: the cause, rather than a summary.
        if transport { noteOutage(error) }
    }

    // MARK: Closing

    func close() {
        let (idle, waiters) = state.withValue { state -> ([RedisConnection], [Waiter]) in
            guard !state.closed else { return ([], []) }
            state.closed = true
            state.jobs = [.stop]
            defer {
                state.idle = []
                state.waiters = []
            }
            return (state.idle, state.waiters)
        }
        idle.forEach { $0.close() }
        for waiter in waiters { waiter.resume(.failure(.clientClosed)) }
        jobSignal.signal()
        reactor.stop(self)
    }

    var isClosed: Bool { state.withValue { $0.closed } }

    static func reason(_ error: RedisError) -> String {
        switch error {
        case .connectionFailed(let reason), .timeout(let reason), .protocolError(let reason): reason
        default: error.description
        }
    }
}

