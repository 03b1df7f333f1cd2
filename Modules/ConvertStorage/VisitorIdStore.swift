/// Where an auto-generated visitor id is kept between runs.
///
/// The id is a random UUID the SDK makes once (never an advertising or vendor identifier): it
/// must read back the same across launches and across instances over the same kept state, and
/// stay on the device (an app's Keychain item is not synchronizable). `VisitorIdStoreContract`
/// in ConvertTesting checks these.
///
/// Implementation requirements: safe to call from any thread; `saveVisitorId` replaces the id
/// whole (a reader sees the old or the new one).
public protocol VisitorIdStore: Sendable {
    /// The stored id, if one was saved.
    func loadVisitorId() -> String?
    /// Remembers `id` for later runs.
    func saveVisitorId(_ id: String)
    /// The stored id, or whether none is kept or it cannot be read just now. A store that can
    /// fail for a while (a Keychain before the device's first unlock) says ``VisitorIdRead/unreadable``:
    /// the SDK then keeps what is stored and reads again later instead of replacing it. The
    /// default is ``loadVisitorId()``, with no id taken as none kept.
    func readVisitorId() -> VisitorIdRead
}

/// What a ``VisitorIdStore`` read.
public enum VisitorIdRead: Sendable, Hashable {
    /// The kept id.
    case stored(String)
    /// No id is kept: the SDK makes one and saves it.
    case absent
    /// An id may be kept but cannot be read now: the SDK must not replace it.
    case unreadable
}

extension VisitorIdStore {
    /// ``loadVisitorId()``, with `nil` taken as no id kept.
    public func readVisitorId() -> VisitorIdRead {
        loadVisitorId().map { .stored($0) } ?? .absent
    }
}
