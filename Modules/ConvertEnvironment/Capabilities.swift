import Foundation

/// The current time, as a capability that tests can replace.
public struct TimeSource: Sendable {
    /// Returns the current wall-clock time.
    public let now: @Sendable () -> Date

    /// A source reading the time from `now`.
    public init(now: @escaping @Sendable () -> Date) { self.now = now }

    /// The system clock.
    public static let system = TimeSource { Date() }

    /// A clock stopped at `date`.
    package static func constant(_ date: Date) -> TimeSource { TimeSource { date } }
}

/// New identifiers (auto visitor ids), as a capability that tests can replace.
public struct IdentifierSource: Sendable {
    /// Returns a new identifier on every call.
    public let next: @Sendable () -> String

    /// A source taking identifiers from `next`.
    public init(next: @escaping @Sendable () -> String) { self.next = next }

    /// Random UUIDs, lowercased.
    public static let uuid = IdentifierSource { RandomUUID.string() }

    /// The same id every time.
    package static func constant(_ id: String) -> IdentifierSource { IdentifierSource { id } }
}
