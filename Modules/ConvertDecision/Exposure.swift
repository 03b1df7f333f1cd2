import ConvertVisitor

/// When a decision's bucketing event (the exposure) is sent.
///
/// ```swift
/// let variation = context.variation(forExperience: "checkout-test", exposure: .manual)
/// // … later, when the variation is on screen:
/// await context.trackExposure(forExperience: "checkout-test")
/// ```
public enum Exposure: Sendable, Hashable {
    /// At decision time, for a visitor's first decision of an experience (the default).
    case automatic
    /// Not at decision time: the decision is stored (the visitor stays in the variation) and
    /// its event waits for ``ConvertContext/trackExposure(forExperience:)``, which sends it
    /// once per visitor, experience and variation.
    case manual
    /// Never: the decision is stored, its event is not sent (`enableTracking: false`).
    case none
}

/// What ``ConvertContext/trackExposure(forExperience:)`` did.
public enum ExposureResult: Sendable, Hashable {
    /// The bucketing event was queued now.
    case tracked
    /// The bucketing event was refused by the tracking queue (too large to send, the queue
    /// full, or the SDK shut down) and will never be sent; the exposure counts as sent, as a
    /// refused conversion counts for dedup.
    case dropped
    /// It was sent before: by an earlier call, before a restart, by another process on the same
    /// storage directory, or by another instance on the same shared visitor store.
    case alreadyTracked
    /// The visitor has no stored decision for the experience (never decided, decided with no
    /// variation, decided without consent so nothing was stored, unknown key, SDK not ready,
    /// unusable visitor id, or the context previews).
    case notDecided
    /// The decision was not made with ``Exposure/manual``: its event went out when it was made
    /// (``Exposure/automatic``) or never does (``Exposure/none``).
    case notManual
    /// Tracking is off for the SDK, or consent was withdrawn after the decision was stored; the
    /// exposure stays pending and can be tracked later.
    case trackingOff
}

/// Whether a visitor agreed to be stored and tracked.
public enum VisitorConsent: Sendable, Hashable {
    /// Decisions are stored and tracked, conversions and segments recorded.
    case granted
    /// Decisions are made (the same answers) but nothing is stored or sent.
    case denied
}
