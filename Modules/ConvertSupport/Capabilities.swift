import Foundation

/// The current time, as a capability that tests can replace.
public struct TimeSource: Sendable {
    public let now: @Sendable () -> Date

    public init(now: @escaping @Sendable () -> Date) { self.now = now }

    /// The system clock.
    public static let system = TimeSource { Date() }

    /// A clock stopped at `date`.
    public static func constant(_ date: Date) -> TimeSource { TimeSource { date } }
}

/// New identifiers (auto visitor ids), as a capability that tests can replace.
public struct IdentifierSource: Sendable {
    public let next: @Sendable () -> String

    public init(next: @escaping @Sendable () -> String) { self.next = next }

    /// Random UUIDs, lowercased.
    public static let uuid = IdentifierSource { UUID().uuidString.lowercased() }

    /// The same id every time.
    public static func constant(_ id: String) -> IdentifierSource { IdentifierSource { id } }
}
