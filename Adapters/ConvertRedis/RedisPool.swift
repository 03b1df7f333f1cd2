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
/// - Connections are opened by the connector thread, one at a time, never by a caller. A call
///   that finds no idle connection is queued: the I/O thread runs it on the next connection to
///   come free or be opened, or fails it at its deadline.
/// - A transport failure makes the server *unavailable*: idle connections are closed, waiting
///   calls fail, later calls fail at once, and a background probe (after the reconnect backoff,
///   measured on the injected clock) opens a connection and sends `PING`; its success makes the
///   server available again.
/// - A call that finds an idle connection runs its exchange on the calling thread and, when the
///   reply is slow, hands it to the I/O thread (`RedisReactor`).
final class RedisPool: Sendable {
    /// Since when the server is unavailable, and when the next probe runs.
    struct Outage {
        var since: Duration
        var failures: Int
        var retryAt: Duration
        var cause: RedisError
    }

    /// A call waiting for a connection: the I/O thread runs its exchange on the next connection
    /// to come free, so a connection never waits for the caller's thread to be scheduled.
    struct Request: Sendable {
        let id: UInt64
        let commands: EncodedCommands
        let deadline: ContinuousClock.Instant
        let done: @Sendable (Result<[RESPValue], RedisError>) -> Void
    }

    /// Commands sent on every new connection after `AUTH` and `SELECT`, and what to do with
    /// their replies.
    struct Setup: Sendable {
        let commands: [RedisCommand]
        let handle: @Sendable ([RESPValue]) -> Void
    }

    enum Job: Sendable {
        /// A connection for the pool (its slot is counted in `open` already).
        case pool
        /// A probe of an unavailable server: a connection that answers `PING`.
        case probe(@Sendable (Result<Lease, RedisError>) -> Void)
        case stop
    }

    // `@unchecked`: idle connections are not Sendable; they are touched only under the lock.
    struct State: @unchecked Sendable {
        var idle: [RedisConnection] = []
        /// Connections open, lent out, or being opened for the pool.
        var open = 0
        /// Calls waiting for a connection, oldest first.
        var queue: [Request] = []
        var nextRequestId: UInt64 = 0
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
    let clock: any SleepClock
    let backoff: Backoff
    let state = Locked(State())
    let jobSignal = DispatchSemaphore(value: 0)
    let reactor: RedisReactor

    /// How long an `async` call waits for its reply on the calling thread before handing the
    /// exchange to the I/O thread: one read with this timeout (`SO_RCVTIMEO`, which the kernel
    /// rounds up to its timer tick: a few milliseconds when the reply does not come).
    static let callerWait: Duration = .milliseconds(1)
    /// Above this average round trip, `async` calls suspend as soon as their commands are
    /// written: a thread blocked for a slow network's round trip is worth more than the hop.
    static let callerWaitBelow: Duration = .microseconds(250)

    /// A connection that ended an exchange this recently is lent without a poll for a hang-up:
    /// one a server closed since fails its next exchange instead (a kill within this window).
    static let trustedFor: Duration = .milliseconds(10)

    /// Numbers clients in thread names (`Redis.io.3`, `Redis.cn.3`).
    private static let numbers = Locked(0)
    /// This client's number in its threads' names.
    let number: Int
    /// Why every call fails before any connection is opened: the configuration asks for TLS,
    /// which the client's transport cannot give.
    let refusal: RedisError?
    /// What opens the connections' streams.
    let transport: any RedisTransport

    init(configuration: RedisConfiguration, transport: any RedisTransport = RedisPlainTransport(), clock: any SleepClock) {
        number = Self.numbers.withValue { count in
            count += 1
            return count
        }
        self.configuration = configuration
        self.clock = clock
        self.transport = transport
        refusal = configuration.tls && !transport.encrypts ? RedisError.plaintextOnly(configuration) : nil
        backoff = Backoff(initial: configuration.reconnectBackoffInitial, maximum: configuration.reconnectBackoffMax)
        reactor = RedisReactor()
    }

    var poolSize: Int { max(configuration.poolSize, 1) }

    // MARK: Events and setup

    func subscribe(_ handler: @escaping @Sendable (RedisClientEvent) -> Void) {
        state.withValue { $0.subscribers.append(handler) }
    }

    func publish(_ event: RedisClientEvent) {
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

    /// Whether the server is taken as reachable (no outage, no refused configuration).
    var isAvailable: Bool { refusal == nil && state.withValue { $0.outage == nil } }

    // MARK: Taking a connection

    enum Checkout {
        case lease(Lease)
        case fail(RedisError)
        case wait
    }

    /// An idle connection if one is sound and no call waits, a failure while the server is
    /// unavailable, else `wait` (the call is then ``submit(_:deadline:done:)``ted).
    func checkoutNow() -> Checkout {
        // A closed client says so first, whatever its configuration.
        if let refusal { return .fail(state.withValue { $0.closed } ? .clientClosed : refusal) }
        while true {
            let step = state.withValue { state -> (Checkout, RedisConnection?) in
                if state.closed { return (.fail(.clientClosed), nil) }
                if let outage = state.outage { return (.fail(unavailable(outage)), nil) }
                // Calls already waiting go first.
                if state.queue.isEmpty, let idle = state.idle.popLast() { return (.wait, idle) }
                return (.wait, nil)
            }
            guard case .wait = step.0 else { return step.0 }
            guard let candidate = step.1 else { return .wait }
            if candidate.isSound(recent: Self.trustedFor) { return .lease(Lease(connection: candidate)) }
            // The server closed it (a restart, an idle timeout): drop it, look again.
            candidate.close()
            state.withValue { $0.open -= 1 }
        }
    }

    /// Queues a call for the I/O thread, which runs it on the next connection to come free (one
    /// is opened when the pool has room) or fails it at `deadline`. Returns its id, for
    /// ``cancel(_:)``.
    @discardableResult
    func submit(_ commands: EncodedCommands, deadline: ContinuousClock.Instant,
                done: @escaping @Sendable (Result<[RESPValue], RedisError>) -> Void) -> UInt64 {
        var failure: RedisError?
        var start: (Lease, Request)?
        var connect = false
        let id = state.withValue { state -> UInt64 in
            state.nextRequestId += 1
            let request = Request(id: state.nextRequestId, commands: commands, deadline: deadline, done: done)
            if state.closed {
                failure = .clientClosed
            } else if let refusal {
                failure = refusal
            } else if let outage = state.outage {
                failure = unavailable(outage)
            } else if state.queue.isEmpty, let idle = state.idle.popLast() {
                // Came free since the caller looked; the I/O thread checks it is sound.
                start = (Lease(connection: idle), request)
            } else {
                state.queue.append(request)
                if state.open < poolSize {
                    state.open += 1
                    state.jobs.append(.pool)
                    connect = true
                }
            }
            return request.id
        }
        if let failure { done(.failure(failure)) }
        if let (lease, request) = start {
            reactor.add(RedisReactor.Exchange(lease: lease, commands: request.commands, started: .now, deadline: deadline,
                                              done: done), pool: self)
        } else if failure == nil {
            if connect { startConnectorJob() }
            // The I/O thread fails the call at its deadline.
            reactor.wake(self)
        }
        return id
    }

    /// Puts a call back at the head of the queue (its connection turned out closed).
    func requeue(_ commands: EncodedCommands, deadline: ContinuousClock.Instant,
                 done: @escaping @Sendable (Result<[RESPValue], RedisError>) -> Void) {
        let failure = state.withValue { state -> RedisError? in
            if state.closed { return .clientClosed }
            if let outage = state.outage { return unavailable(outage) }
            state.nextRequestId += 1
            state.queue.insert(Request(id: state.nextRequestId, commands: commands, deadline: deadline, done: done), at: 0)
            return nil
        }
        if let failure { done(.failure(failure)) }
    }

    /// Removes the queued call `id`; `false` when it already started (or ended).
    func cancel(_ id: UInt64) -> Bool {
        state.withValue { state in
            guard let index = state.queue.firstIndex(where: { $0.id == id }) else { return false }
            state.queue.remove(at: index)
            return true
        }
    }

    /// Fails the queued calls whose deadline passed; the earliest deadline of those left.
    func expireQueued(now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        var expired: [Request] = []
        let next = state.withValue { state -> ContinuousClock.Instant? in
            var next: ContinuousClock.Instant?
            state.queue.removeAll { request in
                if request.deadline <= now {
                    expired.append(request)
                    return true
                }
                next = next.map { min($0, request.deadline) } ?? request.deadline
                return false
            }
            return next
        }
        for request in expired { request.done(.failure(poolTimeout())) }
        return next
    }

    func poolTimeout() -> RedisError {
        .timeout(reason: "no pooled connection came free within \(configuration.commandTimeout.wholeMillisecondsRoundedUp) ms "
            + "(\(poolSize) connection\(poolSize == 1 ? "" : "s"))")
    }

    func unavailable(_ outage: Outage) -> RedisError {
        let wait = max(outage.retryAt - clock.elapsed, .zero)
        return .connectionFailed(reason: "server unavailable, next connect attempt in \(wait.wholeMillisecondsRoundedUp) ms "
            + "(last attempt: \(Self.reason(outage.cause)))")
    }

    // MARK: Giving a connection back

    /// Returns a connection after an exchange: to the oldest queued call still in time (run by
    /// the I/O thread), else to the idle list; a broken one is dropped, and replaced when calls
    /// are left waiting.
    func release(_ lease: Lease) {
        let connection = lease.connection
        var next: Request?
        var expired: [Request] = []
        var discard: RedisConnection?
        var connect = false
        let now = ContinuousClock.now
        state.withValue { state in
            guard connection.isOpen, !state.closed, state.outage == nil else {
                discard = connection
                state.open -= 1
                if !state.closed, state.outage == nil, !state.queue.isEmpty, state.open < poolSize {
                    state.open += 1
                    state.jobs.append(.pool)
                    connect = true
                }
                return
            }
            while !state.queue.isEmpty {
                let request = state.queue.removeFirst()
                if request.deadline <= now {
                    expired.append(request)
                    continue
                }
                next = request
                return
            }
            state.idle.append(connection)
        }
        discard?.close()
        for request in expired { request.done(.failure(poolTimeout())) }
        if let next {
            reactor.add(RedisReactor.Exchange(lease: lease, commands: next.commands, started: now, deadline: next.deadline,
                                              done: next.done), pool: self)
        }
        if connect { startConnectorJob() }
    }

    /// Ends an exchange: the connection back to the pool (or dropped, when the exchange broke
    /// it), and an outage noted when the failure says the server is unreachable.
    func finish(_ lease: Lease, started: ContinuousClock.Instant, result: Result<[RESPValue], RedisError>) {
        release(lease)
        if case .failure(let error) = result, isOutage(error, waited: .now - started) { noteOutage(error) }
    }

    /// Notes how long a single-command exchange took, for ``waitsOnCaller`` (a sample counts
    /// for at most twice the caller's wait, so one stall does not stop waits on the caller).
    func noteRoundTrip(_ elapsed: Duration) {
        let sample = min(elapsed, Self.callerWait * 2)
        state.withValue { state in
            state.roundTrip = state.roundTrip == .zero ? sample : (state.roundTrip * 7 + sample) / 8
        }
    }

    /// Whether an `async` call waits for its reply on the calling thread first: round trips are
    /// short and no call is queued (under contention the thread is worth more to the others).
    var waitsOnCaller: Bool { state.withValue { $0.roundTrip < Self.callerWaitBelow && $0.queue.isEmpty } }

    // MARK: Closing

    func close() {
        let (idle, queued, probes) = state.withValue { state -> ([RedisConnection], [Request], [@Sendable (Result<Lease, RedisError>) -> Void]) in
            guard !state.closed else { return ([], [], []) }
            state.closed = true
            // A probe not yet taken by the connector is answered here: its prober waits for it.
            let probes = state.jobs.compactMap { job -> (@Sendable (Result<Lease, RedisError>) -> Void)? in
                if case .probe(let done) = job { done } else { nil }
            }
            state.jobs = [.stop]
            defer {
                state.idle = []
                state.queue = []
            }
            return (state.idle, state.queue, probes)
        }
        idle.forEach { $0.close() }
        for request in queued { request.done(.failure(.clientClosed)) }
        for probe in probes { probe(.failure(.clientClosed)) }
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

