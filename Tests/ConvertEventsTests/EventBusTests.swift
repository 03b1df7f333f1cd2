import ConvertEvents
import Foundation
import Testing

private struct Ping: EventBusEvent { let n: Int }
private struct Pong: EventBusEvent { let n: Int }

private final class Listener: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Int] = []
    func add(_ n: Int) { lock.withLock { values.append(n) } }
    var received: [Int] { lock.withLock { values } }
}

/// A value shared with handlers that run on publishing threads.
private final class Shared<Value: Sendable>: @unchecked Sendable {  // every access holds `lock`
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withValue<Result>(_ body: (inout Value) -> Result) -> Result { lock.withLock { body(&value) } }
}

@Suite struct EventBusTests {
    @Test func deliversByTypeToTheOwner() {
        let bus = EventBus()
        let listener = Listener()
        bus.subscribe(owner: listener, to: Ping.self) { owner, event in owner.add(event.n) }
        bus.subscribe(owner: listener) { (event: Pong) in listener.add(100 + event.n) }
        bus.publish(Ping(n: 1))
        bus.publish(Pong(n: 2))
        #expect(listener.received == [1, 102])
    }

    @Test func ownerLifetimeEndsTheSubscriptionAndItIsCleanedLazily() {
        let bus = EventBus()
        let log = Listener()
        var owner: Listener? = Listener()
        bus.subscribe(owner: owner!, to: Ping.self) { _, event in log.add(event.n) }
        bus.publish(Ping(n: 1))
        #expect(bus.subscriberCount(for: Ping.self) == 1)
        owner = nil
        bus.publish(Ping(n: 2))
        #expect(log.received == [1])
        #expect(bus.subscriberCount(for: Ping.self) == 0)
    }

    @Test func tokenCancelsExactlyOneSubscription() {
        let bus = EventBus()
        let listener = Listener()
        let first = bus.subscribe(owner: listener, to: Ping.self) { owner, e in owner.add(e.n) }
        bus.subscribe(owner: listener, to: Ping.self) { owner, e in owner.add(10 * e.n) }
        first.cancel()
        first.cancel()
        #expect(!first.isActive)
        bus.publish(Ping(n: 1))
        #expect(listener.received == [10])
    }

    @Test func cancellingDuringAPublishStopsDeliveryFromTheSnapshot() {
        let bus = EventBus()
        let listener = Listener()
        let second = Shared<SubscriptionToken?>(nil)
        bus.subscribe(owner: listener, to: Ping.self) { _, _ in second.withValue { $0 }?.cancel() }
        let token = bus.subscribe(owner: listener, to: Ping.self) { owner, e in owner.add(e.n) }
        second.withValue { $0 = token }
        bus.publish(Ping(n: 1))
        #expect(listener.received.isEmpty)
    }

    @Test func subscribersAddedDuringAPublishGetOnlyLaterEvents() {
        let bus = EventBus()
        let listener = Listener()
        let added = Shared(false)
        bus.subscribe(owner: listener, to: Ping.self) { owner, _ in
            guard added.withValue({ added in defer { added = true }; return !added }) else { return }
            bus.subscribe(owner: owner, to: Ping.self) { owner, e in owner.add(e.n) }
        }
        bus.publish(Ping(n: 1))
        bus.publish(Ping(n: 2))
        #expect(listener.received == [2])
    }

    @Test func concurrentSubscribersAndPublishersGetEachEventExactlyOnce() {
        let threads = 8, perThread = 200, phase = 8 * 200
        for _ in 0..<3 {
            let bus = EventBus()
            let listeners = (0..<threads).map { _ in Listener() }
            // Each thread subscribes its own listener (by both handler forms) and publishes its own
            // events while the others do the same.
            DispatchQueue.concurrentPerform(iterations: threads) { t in
                let listener = listeners[t]
                if t.isMultiple(of: 2) {
                    bus.subscribe(owner: listener, to: Ping.self) { owner, e in owner.add(e.n) }
                } else {
                    bus.subscribe(owner: listener) { (e: Ping) in listener.add(e.n) }
                }
                for i in 0..<perThread { bus.publish(Ping(n: t * perThread + i)) }
            }
            // Then every thread publishes at once to the complete set of subscribers.
            DispatchQueue.concurrentPerform(iterations: threads) { t in
                for i in 0..<perThread { bus.publish(Ping(n: phase + t * perThread + i)) }
            }
            #expect(bus.subscriberCount(for: Ping.self) == threads)
            for (t, listener) in listeners.enumerated() {
                let received = listener.received
                var counts: [Int: Int] = [:]
                for n in received { counts[n, default: 0] += 1 }
                #expect(counts.values.allSatisfy { $0 == 1 }, "listener \(t) got an event twice")
                // Its own thread's events, published after it subscribed, and every later event.
                let expected = Array(t * perThread..<(t + 1) * perThread) + Array(phase..<2 * phase)
                #expect(expected.allSatisfy { counts[$0] == 1 }, "listener \(t) missed an event")
                #expect(received.allSatisfy { $0 >= 0 && $0 < 2 * phase })
            }
        }
    }

    @Test func subscribeOnceDeliversExactlyOnceUnderRacingPublishes() {
        for _ in 0..<20 {
            let bus = EventBus()
            let listener = Listener()
            bus.subscribeOnce(owner: listener, to: Ping.self) { owner, e in owner.add(e.n) }
            DispatchQueue.concurrentPerform(iterations: 64) { i in bus.publish(Ping(n: i)) }
            #expect(listener.received.count == 1)
            #expect(bus.subscriberCount(for: Ping.self) == 0)
        }
    }

    @Test func unsubscribeByOwnerAndType() {
        let bus = EventBus()
        let a = Listener(), b = Listener()
        bus.subscribe(owner: a, to: Ping.self) { o, e in o.add(e.n) }
        bus.subscribe(owner: a, to: Pong.self) { o, e in o.add(e.n) }
        bus.subscribe(owner: b, to: Ping.self) { o, e in o.add(e.n) }
        bus.unsubscribe(owner: a, from: Ping.self)
        bus.publish(Ping(n: 1))
        bus.publish(Pong(n: 2))
        #expect(a.received == [2])
        #expect(b.received == [1])
        bus.unsubscribeAll(for: a)
        bus.publish(Pong(n: 3))
        #expect(a.received == [2])
    }

    @Test func streamDeliversAndEndsItsSubscriptionWhenReleased() async {
        let bus = EventBus()
        func consumeThree() async -> [Int] {
            let stream = bus.stream(Ping.self)
            #expect(bus.subscriberCount(for: Ping.self) == 1)
            for n in 1...3 { bus.publish(Ping(n: n)) }
            var got: [Int] = []
            for await event in stream {
                got.append(event.n)
                if got.count == 3 { break }
            }
            return got
        }
        #expect(await consumeThree() == [1, 2, 3])
        #expect(bus.subscriberCount(for: Ping.self) == 0)
    }

    @Test func streamBufferIsBounded() async {
        let bus = EventBus()
        let stream = bus.stream(Ping.self, bufferingPolicy: .bufferingNewest(2))
        for n in 1...10 { bus.publish(Ping(n: n)) }
        var got: [Int] = []
        for await event in stream {
            got.append(event.n)
            if got.count == 2 { break }
        }
        #expect(got == [9, 10])
    }

    @MainActor @Test func subscribeOnMainHopsToTheMainActor() async {
        let bus = EventBus()
        let listener = Listener()
        bus.subscribeOnMain(owner: listener, to: Ping.self) { owner, e in
            MainActor.assertIsolated()
            owner.add(e.n)
        }
        await Task.detached { bus.publish(Ping(n: 7)) }.value
        for _ in 0..<200 where listener.received.isEmpty { await Task.yield(); try? await Task.sleep(for: .milliseconds(2)) }
        #expect(listener.received == [7])
    }

    @Test func busesAreIndependent() {
        let first = EventBus(), second = EventBus()
        let listener = Listener()
        first.subscribe(owner: listener, to: Ping.self) { owner, e in owner.add(e.n) }
        second.publish(Ping(n: 1))
        first.publish(Ping(n: 2))
        #expect(listener.received == [2])
        #expect(second.subscriberCount(for: Ping.self) == 0)
    }
}
