/// A system event named together with its payload type, so a subscriber receives the payload
/// itself instead of an ``EventPayloadValue`` to match again.
///
/// ```swift
/// let token = sdk.subscribe(to: .bucketing) { info in print(info.visitorId, info.variationId) }
/// sdk.unsubscribe(token)
/// ```
public struct TypedSystemEvent<Payload: Sendable>: Sendable {
    /// The event subscribed to.
    package let event: SystemEvent
    /// Reads this event's payload out of the untyped value (`nil` for another event's).
    package let payload: @Sendable (EventPayloadValue) -> Payload?

    /// Names `event` with the function that reads its payload.
    package init(_ event: SystemEvent, payload: @escaping @Sendable (EventPayloadValue) -> Payload?) {
        self.event = event
        self.payload = payload
    }
}

extension TypedSystemEvent where Payload == ReadyPayload {
    /// ``SystemEvent/ready``: the first config is installed.
    public static var ready: Self { Self(.ready) { if case .ready(let p) = $0 { p } else { nil } } }
}

extension TypedSystemEvent where Payload == ConfigUpdatedPayload {
    /// ``SystemEvent/configUpdated``: a changed config replaced the installed one.
    public static var configUpdated: Self { Self(.configUpdated) { if case .configUpdated(let p) = $0 { p } else { nil } } }
}

extension TypedSystemEvent where Payload == ApiQueueReleasedPayload {
    /// ``SystemEvent/apiQueueReleased``: the server acknowledged a batch of tracking events.
    public static var apiQueueReleased: Self {
        Self(.apiQueueReleased) { if case .apiQueueReleased(let p) = $0 { p } else { nil } }
    }
}

extension TypedSystemEvent where Payload == BucketingPayload {
    /// ``SystemEvent/bucketing``: a visitor was given a variation (fresh or stored).
    public static var bucketing: Self { Self(.bucketing) { if case .bucketing(let p) = $0 { p } else { nil } } }
}

extension TypedSystemEvent where Payload == ConversionPayload {
    /// ``SystemEvent/conversion``: a conversion was queued for sending (never while tracking is off).
    public static var conversion: Self { Self(.conversion) { if case .conversion(let p) = $0 { p } else { nil } } }
}

extension TypedSystemEvent where Payload == SegmentsPayload {
    /// ``SystemEvent/segments``: a visitor's segments changed.
    public static var segments: Self { Self(.segments) { if case .segments(let p) = $0 { p } else { nil } } }
}

extension TypedSystemEvent where Payload == LocationActivatedPayload {
    /// ``SystemEvent/locationActivated``: a visitor entered a location.
    public static var locationActivated: Self {
        Self(.locationActivated) { if case .locationActivated(let p) = $0 { p } else { nil } }
    }
}

extension TypedSystemEvent where Payload == LocationDeactivatedPayload {
    /// ``SystemEvent/locationDeactivated``: a visitor left a location.
    public static var locationDeactivated: Self {
        Self(.locationDeactivated) { if case .locationDeactivated(let p) = $0 { p } else { nil } }
    }
}

extension TypedSystemEvent where Payload == AudiencesPayload {
    /// ``SystemEvent/audiences``: the audiences a visitor matched.
    public static var audiences: Self { Self(.audiences) { if case .audiences(let p) = $0 { p } else { nil } } }
}

extension TypedSystemEvent where Payload == DataStoreQueueReleasedPayload {
    /// ``SystemEvent/dataStoreQueueReleased``: pending visitor data was written.
    public static var dataStoreQueueReleased: Self {
        Self(.dataStoreQueueReleased) { if case .dataStoreQueueReleased(let p) = $0 { p } else { nil } }
    }
}
