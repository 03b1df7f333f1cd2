import ConvertStorage
import ConvertTracking
import Foundation

/// The background uploads handed to the system and not yet settled, kept in a ``ByteStore``
/// so that a later launch knows what an upload it never saw end carried.
///
/// An entry is written before its upload starts and removed when its outcome is known; an
/// entry whose upload was delivered while no process listened is kept, marked delivered, until
/// the journal's copies of its events are acknowledged (a kill in between loses nothing).
struct BackgroundUploadLedger {
    struct Entry: Codable, Equatable {
        let label: String
        var events: [TrackingEvent]
        /// The system reported the upload answered with a 2xx.
        var delivered: Bool
        /// How many launches have carried it delivered without its events coming up again;
        /// past a few it is forgotten (its events were dropped from the journal otherwise).
        var carried: Int
    }

    static let name = "background-uploads.json"
    static let maximumCarried = 3

    let store: any ByteStore

    func load() -> [Entry] {
        guard let data = try? store.read(Self.name), let entries = try? JSONDecoder().decode([Entry].self, from: data) else {
            return []
        }
        return entries
    }

    func save(_ entries: [Entry]) throws {
        if entries.isEmpty {
            try store.remove(Self.name)
        } else {
            try store.write(try JSONEncoder().encode(entries), to: Self.name)
        }
    }
}

/// Events counted by value: the delivered copies a later batch may hold again.
struct EventTally {
    private(set) var counts: [TrackingEvent: Int] = [:]

    mutating func add(_ events: [TrackingEvent]) {
        for event in events { counts[event, default: 0] += 1 }
    }

    /// Splits `events` into those the tally holds (each copy matched once) and the rest.
    func split(_ events: [TrackingEvent]) -> (matched: [TrackingEvent], rest: [TrackingEvent]) {
        var left = counts
        var matched: [TrackingEvent] = []
        var rest: [TrackingEvent] = []
        for event in events {
            if let count = left[event], count > 0 {
                left[event] = count - 1
                matched.append(event)
            } else {
                rest.append(event)
            }
        }
        return (matched, rest)
    }

    mutating func remove(_ events: [TrackingEvent]) {
        for event in events {
            guard let count = counts[event] else { continue }
            counts[event] = count > 1 ? count - 1 : nil
        }
    }
}
