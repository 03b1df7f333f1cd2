#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import ConvertSynchronization
import Foundation

/// The client's I/O thread: it runs the exchanges of queued calls on the connections that come
/// free, finishes those whose reply did not come while the calling thread waited, and fails
/// queued calls at their deadline. One thread per client, started on first need, polling every
/// socket it holds and a wake-up pipe; it never blocks on anything else, so however many calls
/// wait, the client adds one thread, and a connection never waits for a caller's thread.
final class RedisReactor: Sendable {
    /// An exchange to run (`commands`: not begun yet) or to finish (`nil`: its caller began it).
    struct Exchange: Sendable {
        let lease: Lease
        var commands: EncodedCommands?
        var started: ContinuousClock.Instant
        let deadline: ContinuousClock.Instant
        /// Whether its round trip counts towards the average (one command, not a large batch).
        var timed = false
        let done: @Sendable (Result<[RESPValue], RedisError>) -> Void
    }

    private struct State: Sendable {
        var incoming: [Exchange] = []
        var running = false
        var stopping = false
    }

    private let state = Locked(State())
    /// Read and write ends of the wake-up pipe.
    private let wakeRead: Int32
    private let wakeWrite: Int32

    init() {
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for fd in ends {
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK)
            }
        }
        wakeRead = ends[0]
        wakeWrite = ends[1]
    }

    deinit {
        if wakeRead >= 0 { _ = systemClose(wakeRead) }
        if wakeWrite >= 0 { _ = systemClose(wakeWrite) }
    }

    /// Takes over `exchange` until its replies are in or its deadline passes.
    func add(_ exchange: Exchange, pool: RedisPool) {
        state.withValue { $0.incoming.append(exchange) }
        wake(pool)
    }

    /// Makes the thread look again at what it holds and at the pool's queued calls (starting it
    /// on first use).
    func wake(_ pool: RedisPool) {
        let start = state.withValue { state -> Bool in
            defer { state.running = true }
            return !state.running && !state.stopping
        }
        if start {
            let weak = WeakPool(pool)
            let number = pool.number
            Thread { [self] in run(weak, number: number) }.start()
        }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    /// Lets the thread end once the exchanges it holds have ended.
    func stop(_ pool: RedisPool) {
        state.withValue { $0.stopping = true }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    private func run(_ weak: WeakPool, number: Int) {
        nameCurrentThread("Redis.io.\(number)")
        var active: [Exchange] = []
        var descriptors: [pollfd] = []
        var drain = [UInt8](repeating: 0, count: 64)
        while true {
            let (incoming, stopping) = state.withValue { state -> ([Exchange], Bool) in
                defer { state.incoming = [] }
                return (state.incoming, state.stopping)
            }
            guard let pool = weak.pool else {
                // The client is gone: nothing can use the replies.
                for exchange in active + incoming { exchange.done(.failure(.clientClosed)) }
                state.withValue { $0.running = false }
                return
            }
            for var exchange in incoming {
                guard let commands = exchange.commands else {
                    active.append(exchange)
                    continue
                }
                // A queued call on a connection that came free: begin it here.
                let connection = exchange.lease.connection
                guard connection.isSound(recent: RedisPool.trustedFor) else {
                    // Closed by the server while idle: the call waits for another connection.
                    connection.close()
                    pool.requeue(commands, deadline: exchange.deadline, done: exchange.done)
                    pool.release(exchange.lease)
                    continue
                }
                exchange.commands = nil
                exchange.started = .now
                do throws(RedisError) {
                    try connection.begin(commands)
                    if try connection.advance(.none) {
                        let replies = connection.takeReplies()
                        pool.finish(exchange.lease, started: exchange.started, result: .success(replies))
                        exchange.done(.success(replies))
                    } else {
                        active.append(exchange)
                    }
                } catch {
                    connection.fail(error)
                    pool.finish(exchange.lease, started: exchange.started, result: .failure(error))
                    exchange.done(.failure(error))
                }
            }
            let now = ContinuousClock.now
            var next = pool.expireQueued(now: now)
            if stopping && active.isEmpty {
                state.withValue { $0.running = false }
                return
            }

            descriptors.removeAll(keepingCapacity: true)
            descriptors.append(pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0))
            for exchange in active {
                descriptors.append(pollfd(fd: exchange.lease.connection.descriptor,
                                          events: exchange.lease.connection.pollEvents, revents: 0))
                next = next.map { min($0, exchange.deadline) } ?? exchange.deadline
            }
            let timeout: Int32 = next.map { Int32(clamping: max($0 - now, .zero).wholeMillisecondsRoundedUp) } ?? -1
            let ready = poll(&descriptors, nfds_t(descriptors.count), timeout)
            if ready < 0 && errno != EINTR { usleep(1_000) }
            if descriptors[0].revents != 0 { while read(wakeRead, &drain, drain.count) > 0 {} }

            let after = ContinuousClock.now
            var finished: [(Exchange, Result<[RESPValue], RedisError>)] = []
            var kept: [Exchange] = []
            for (index, exchange) in active.enumerated() {
                let connection = exchange.lease.connection
                let events = ready > 0 ? descriptors[index + 1].revents : 0
                do {
                    if events != 0, try connection.advance(events & ~Int16(POLLOUT) != 0 ? .available : .none) {
                        finished.append((exchange, .success(connection.takeReplies())))
                    } else if after >= exchange.deadline {
                        let error = RedisError.timeout(reason: RedisClient.noReply(from: connection.peer, started: exchange.started,
                                                                                   deadline: exchange.deadline))
                        connection.fail(error)
                        finished.append((exchange, .failure(error)))
                    } else {
                        kept.append(exchange)
                    }
                } catch {
                    finished.append((exchange, .failure(error)))
                }
            }
            active = kept
            for (exchange, result) in finished {
                // Timed here, not when the caller resumes: a busy caller's wait is not the network's.
                if exchange.timed, case .success = result { pool.noteRoundTrip(after - exchange.started) }
                pool.finish(exchange.lease, started: exchange.started, result: result)
                exchange.done(result)
            }
        }
    }
}

/// The pool as the I/O thread sees it: weakly, so the thread never keeps a dropped client.
struct WeakPool: Sendable {
    weak let pool: RedisPool?
    init(_ pool: RedisPool) { self.pool = pool }
}

private func systemClose(_ fd: Int32) -> Int32 { close(fd) }
