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
        var second: SubscriptionToken?
        bus.subscribe(owner: listener, to: Ping.self) { _, _ in second?.cancel() }
        second = bus.subscribe(owner: listener, to: Ping.self) { owner, e in owner.add(e.n) }
        bus.publish(Ping(n: 1))
        #expect(listener.received.isEmpty)
    }

    @Test func subscribersAddedDuringAPublishGetOnlyLaterEvents() {
        let bus = EventBus()
        let listener = Listener()
        var added = false
        bus.subscribe(owner: listener, to: Ping.self) { owner, _ in
            guard !added else { return }
            added = true
            bus.subscribe(owner: owner, to: Ping.self) { owner, e in owner.add(e.n) }
        }
        bus.publish(Ping(n: 1))
        bus.publish(Ping(n: 2))
        #expect(listener.received == [2])
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

    @Test func defaultBusExists() {
        #expect(EventBus.default === EventBus.default)
    }
}
