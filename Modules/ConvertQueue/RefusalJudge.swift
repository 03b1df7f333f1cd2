import ConvertTracking

/// Tells a bad event from an outage when the server refuses events on their own ("any other 4xx"). An event is bad when it is refused alone after the server accepted another
/// request since the event was first refused; until then it is a suspect. Suspects of two
/// visitors or more with nothing accepted, or a suspect with nothing else left to try, make an
/// outage: the events are kept and the queue backs off.
struct RefusalJudge {
    typealias Entry = TrackingQueue.Entry

    enum Verdict {
        /// Refused while others are accepted: give it up.
        case bad
        /// Held until the next acceptance (or an outage) says more.
        case suspect
        /// Every event is refused: keep these and back off.
        case outage([Entry])
    }

    private(set) var suspects: [Entry] = []
    /// Requests accepted so far, and how many had been when each pending entry was first refused.
    private var acceptances: UInt64 = 0
    private var firstRefused: [UInt64: UInt64] = [:]

    /// Notes a refused batch (of any size): its entries' first refusal, if not noted before.
    mutating func refused(_ batch: [Entry]) {
        for entry in batch where firstRefused[entry.ordinal] == nil { firstRefused[entry.ordinal] = acceptances }
    }

    /// Judges an entry refused on its own (after ``refused(_:)``); `nothingElsePending` when no
    /// other event waits to be sent.
    mutating func judge(_ entry: Entry, nothingElsePending: Bool) -> Verdict {
        if let since = firstRefused[entry.ordinal], acceptances > since {
            firstRefused[entry.ordinal] = nil
            return .bad
        }
        suspects.append(entry)
        guard Set(suspects.map(\.event.visitorId)).count >= 2 || nothingElsePending else { return .suspect }
        defer { suspects = [] }
        return .outage(suspects)
    }

    /// Notes an accepted batch; returns the suspects, each to be sent once more on its own.
    mutating func accepted(_ batch: [Entry]) -> [Entry] {
        acceptances += 1
        if !firstRefused.isEmpty { for entry in batch { firstRefused[entry.ordinal] = nil } }
        defer { suspects = [] }
        return suspects
    }
}
