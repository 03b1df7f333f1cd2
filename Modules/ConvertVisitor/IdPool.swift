import ConvertSynchronization
import Foundation

/// A small integer standing for an id string (experience, variation, location, goal) in
/// visitor records, so a record is a few machine words instead of a few dictionaries.
package struct InternedId: Hashable, Comparable, Sendable {
    package let raw: UInt32

    package init(raw: UInt32) { self.raw = raw }

    package static func < (lhs: InternedId, rhs: InternedId) -> Bool { lhs.raw < rhs.raw }

    /// The id for `string`, interned on first use.
    package init(_ string: String) { self = IdPool.shared.intern(string) }

    /// The id string.
    package var string: String { IdPool.shared.string(self) }
}

/// The process-wide, append-only table of interned ids.
///
/// Only ids that reach visitor records are interned: config ids (a few hundred per project)
/// and ids read back from persisted records, so the table stays small.
package final class IdPool: Sendable {
    package static let shared = IdPool()

    private struct State {
        var numbers: [String: UInt32] = [:]
        var strings: [String] = []

        mutating func intern(_ string: String) -> InternedId {
            if let number = numbers[string] { return InternedId(raw: number) }
            let number = UInt32(strings.count)
            strings.append(string)
            numbers[string] = number
            return InternedId(raw: number)
        }
    }

    private let state = Locked(State())

    package func intern(_ string: String) -> InternedId {
        state.withValue { $0.intern(string) }
    }

    /// Interns many ids under one lock.
    package func intern(_ many: [String]) -> [InternedId] {
        state.withValue { state in many.map { state.intern($0) } }
    }

    /// The id of `string` if it was ever interned; never adds.
    package func existing(_ string: String) -> InternedId? {
        state.withValue { $0.numbers[string].map(InternedId.init(raw:)) }
    }

    package func string(_ id: InternedId) -> String {
        state.withValue { $0.strings[Int(id.raw)] }
    }
}
