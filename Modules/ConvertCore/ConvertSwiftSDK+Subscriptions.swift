import ConvertEvents

extension ConvertSwiftSDK {
    /// Subscribes `callback` to one event, handing it that event's payload; returns at once
    /// (no `await`). Callbacks run off the main thread unless `delivery` is
    /// ``EventDelivery/mainActor``. Subscribe before the calls whose events you want: events
    /// fired before the subscription are not replayed.
    ///
    /// ```swift
    /// let token = sdk.subscribe(to: .bucketing) { info in print(info.visitorId, "→", info.variationKey ?? info.variationId) }
    /// // … decisions …
    /// sdk.unsubscribe(token)
    /// ```
    @discardableResult
    public func subscribe<Payload>(to event: TypedSystemEvent<Payload>, delivery: EventDelivery = .background,
                                   callback: @escaping @Sendable (Payload) -> Void) -> EventListenerToken {
        let read = event.payload
        return runtime.events.subscribe(to: event.event, delivery: delivery) { value in
            if let payload = read(value) { callback(payload) }
        }
    }

    /// Cancels a subscription made with ``subscribe(to:delivery:callback:)`` or
    /// ``on(_:delivery:callback:)``; an unknown or cancelled token is ignored.
    public func unsubscribe(_ token: EventListenerToken) {
        runtime.events.unsubscribe(token)
    }

    /// One event's payloads as an asynchronous sequence (see ``events(of:bufferingNewest:)``).
    ///
    /// ```swift
    /// for await conversion in sdk.events(.conversion) { print(conversion.visitorId, conversion.goalKey) }
    /// ```
    public func events<Payload>(_ event: TypedSystemEvent<Payload>, bufferingNewest limit: Int = 1024) -> AsyncStream<Payload> {
        let hub = runtime.events
        let read = event.payload
        return AsyncStream(bufferingPolicy: .bufferingNewest(max(1, limit))) { continuation in
            let token = hub.subscribe(to: event.event) { value in
                if let payload = read(value) { continuation.yield(payload) }
            }
            continuation.onTermination = { _ in hub.unsubscribe(token) }
        }
    }
}
