import ConvertRedis
import NIOConcurrencyHelpers
import NIOCore
#if canImport(Dispatch)
import Dispatch
#endif

/// The event loop of one TLS connection: whichever thread drives the connection now.
///
/// A Redis connection moves between threads (the connector, a caller, the client's I/O thread),
/// one at a time, and every step of it runs under its stream's lock (``TLSStream``). So the
/// thread inside that lock is the loop: ``inEventLoop`` is `true` for it, and the handlers of the
/// connection's pipeline (NIOSSL's among them) run in place, on that thread, with no hop to a
/// thread of NIO's. Work handed to ``execute(_:)`` or scheduled runs at the stream's next step
/// (``run()``); what is still scheduled when the connection ends is cancelled.
final class DrivenEventLoop: EventLoop, @unchecked Sendable {
    private struct Timer {
        let id: Int
        let deadline: NIODeadline
        let fire: () -> Void
        let cancel: () -> Void
    }

    private struct Work {
        var tasks: [@Sendable () -> Void] = []
        var timers: [Timer] = []
        var nextTimer = 0
        var ended = false
    }

    // Its own lock: a promise completed elsewhere may queue work from another thread.
    private let work = NIOLockedValueBox(Work())

    let description = "the thread driving a Redis TLS connection"

    /// Always `true`: only the thread holding the stream's lock reaches the pipeline.
    var inEventLoop: Bool { true }

    func execute(_ task: @escaping @Sendable () -> Void) {
        work.withLockedValue { $0.tasks.append(task) }
    }

    func scheduleTask<T>(deadline: NIODeadline, _ task: @escaping @Sendable () throws -> T) -> Scheduled<T> {
        let promise: EventLoopPromise<T> = makePromise()
        let id = work.withLockedValue { work -> Int? in
            guard !work.ended else { return nil }
            work.nextTimer += 1
            let id = work.nextTimer
            work.timers.append(Timer(id: id, deadline: deadline,
                                     fire: { promise.assumeIsolatedUnsafeUnchecked().completeWith(Result { try task() }) },
                                     cancel: { promise.fail(EventLoopError.cancelled) }))
            return id
        }
        guard let id else {
            promise.fail(EventLoopError.shutdown)
            return Scheduled(promise: promise, cancellationTask: {})
        }
        return Scheduled(promise: promise) { [weak self] in
            let cancelled = self?.work.withLockedValue { work -> Timer? in
                guard let index = work.timers.firstIndex(where: { $0.id == id }) else { return nil }
                return work.timers.remove(at: index)
            }
            cancelled?.cancel()
        }
    }

    func scheduleTask<T>(in delay: TimeAmount, _ task: @escaping @Sendable () throws -> T) -> Scheduled<T> {
        scheduleTask(deadline: .now() + delay, task)
    }

    func preconditionInEventLoop(file: StaticString, line: UInt) {}

    func preconditionNotInEventLoop(file: StaticString, line: UInt) {
        preconditionFailure("a TLS connection's event loop is the thread driving it", file: file, line: line)
    }

    func next() -> any EventLoop { self }

    func makeIterator() -> EventLoopIterator { EventLoopIterator([self]) }

    #if canImport(Dispatch)
    func shutdownGracefully(queue: DispatchQueue, _ callback: @escaping @Sendable ((any Error)?) -> Void) {
        end()
        queue.async { callback(nil) }
    }
    #endif

    /// Runs the queued tasks and the timers that are due, until none is left.
    func run() {
        while true {
            let (tasks, due) = work.withLockedValue { work -> ([@Sendable () -> Void], [Timer]) in
                let tasks = work.tasks
                work.tasks.removeAll()
                // Every write and read runs this: the clock is read only when a timer waits.
                guard !work.timers.isEmpty else { return (tasks, []) }
                let now = NIODeadline.now()
                let due = work.timers.filter { $0.deadline <= now }
                work.timers.removeAll { $0.deadline <= now }
                return (tasks, due)
            }
            if tasks.isEmpty && due.isEmpty { return }
            for task in tasks { task() }
            for timer in due { timer.fire() }
        }
    }

    /// Runs what is queued, then cancels what is scheduled; later work is refused.
    func end() {
        run()
        let timers = work.withLockedValue { work -> [Timer] in
            work.ended = true
            defer { work.timers.removeAll() }
            return work.timers
        }
        for timer in timers { timer.cancel() }
    }
}

/// A channel over a plain TCP stream of the Redis client, for a pipeline that runs on the thread
/// driving it (``DrivenEventLoop``): the ciphertext the pipeline writes is sent at once as far
/// as the socket takes it, and the rest is kept for ``send()``; the bytes the socket received are
/// handed in by the stream (``receive(_:)``).
final class DrivenChannel: Channel, ChannelCore, @unchecked Sendable {
    let loop = DrivenEventLoop()
    let tcp: any RedisStream
    let allocator = ByteBufferAllocator()
    private let closed: EventLoopPromise<Void>
    private var _pipeline: ChannelPipeline!
    private var active = false
    private var ending = false
    private var unflushed: [(ByteBuffer, EventLoopPromise<Void>?)] = []
    /// Ciphertext the socket has not taken yet, from `sent` on.
    private(set) var outgoing: [UInt8] = []
    private var sent = 0
    /// Why the socket failed while the pipeline wrote, for the stream's next step to throw.
    private(set) var failure: RedisError?

    /// The server's address: an IP address the certificate is checked against, when connected
    /// by one.
    let remoteAddress: SocketAddress?

    init(tcp: any RedisStream, remoteAddress: SocketAddress?) {
        self.tcp = tcp
        self.remoteAddress = remoteAddress
        closed = loop.makePromise()
        _pipeline = ChannelPipeline(channel: self)
    }

    var eventLoop: any EventLoop { loop }
    var pipeline: ChannelPipeline { _pipeline }
    var closeFuture: EventLoopFuture<Void> { closed.futureResult }
    var localAddress: SocketAddress? { nil }
    var parent: (any Channel)? { nil }
    var isWritable: Bool { true }
    var isActive: Bool { active }
    var _channelCore: any ChannelCore { self }

    func setOption<Option: ChannelOption>(_ option: Option, value: Option.Value) -> EventLoopFuture<Void> {
        loop.makeSucceededVoidFuture()
    }

    func getOption<Option: ChannelOption>(_ option: Option) -> EventLoopFuture<Option.Value> {
        loop.makeFailedFuture(ChannelError.operationUnsupported)
    }

    /// Whether ciphertext waits for the socket.
    var isSending: Bool { sent < outgoing.count }

    /// Marks the channel active and tells the pipeline (a client handler starts its handshake).
    func activate() {
        active = true
        pipeline.fireChannelActive()
        loop.run()
    }

    /// Hands bytes the socket received to the pipeline.
    func receive(_ bytes: UnsafeRawBufferPointer) {
        guard active else { return }
        pipeline.fireChannelRead(allocator.buffer(bytes: bytes))
        pipeline.fireChannelReadComplete()
        loop.run()
    }

    /// Sends what the socket takes now of the ciphertext waiting.
    func send() throws(RedisError) {
        guard sent < outgoing.count else { return }
        sent += try tcp.writeAvailable(outgoing, from: sent)
        if sent == outgoing.count {
            outgoing.removeAll(keepingCapacity: true)
            sent = 0
        }
    }

    /// Ends the channel: the pipeline is told, its handlers removed and the socket closed.
    func end() {
        // A handler closing the channel while it is told of the end: the first call finishes.
        guard !ending else { return }
        ending = true
        if active {
            active = false
            unflushed.removeAll()
            pipeline.fireChannelInactive()
            pipeline.fireChannelUnregistered()
            closed.succeed()
        }
        loop.end()
        removeHandlers(pipeline: pipeline)
        tcp.close()
    }

    // MARK: ChannelCore

    func localAddress0() throws -> SocketAddress { throw ChannelError.operationUnsupported }
    func remoteAddress0() throws -> SocketAddress {
        guard let remoteAddress else { throw ChannelError.operationUnsupported }
        return remoteAddress
    }
    func register0(promise: EventLoopPromise<Void>?) { promise?.succeed() }
    func registerAlreadyConfigured0(promise: EventLoopPromise<Void>?) { promise?.succeed() }
    func bind0(to: SocketAddress, promise: EventLoopPromise<Void>?) { promise?.fail(ChannelError.operationUnsupported) }
    func connect0(to: SocketAddress, promise: EventLoopPromise<Void>?) { promise?.fail(ChannelError.operationUnsupported) }

    func write0(_ data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard active else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        unflushed.append((unwrapData(data, as: ByteBuffer.self), promise))
    }

    func flush0() {
        let writes = unflushed
        unflushed.removeAll()
        for (buffer, _) in writes { outgoing.append(contentsOf: buffer.readableBytesView) }
        do {
            try send()
            for (_, promise) in writes { promise?.succeed() }
        } catch {
            // Not fired into the pipeline from inside its own write: the stream throws it next.
            if failure == nil { failure = error }
            for (_, promise) in writes { promise?.fail(error) }
        }
    }

    // Reads are the stream's to make (``receive(_:)``), when its holder reads.
    func read0() {}

    func close0(error: any Error, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        end()
        promise?.succeed()
    }

    func triggerUserOutboundEvent0(_ event: Any, promise: EventLoopPromise<Void>?) {
        promise?.fail(ChannelError.operationUnsupported)
    }

    func channelRead0(_ data: NIOAny) {}
    func errorCaught0(error: any Error) {}
}
