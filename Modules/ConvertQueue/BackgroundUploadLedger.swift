import ConvertStorage
import ConvertTracking
import Foundation

/// The background uploads handed to the system and not yet settled, kept in a ``ByteStore``
/// so that a later launch knows what an upload it never saw end carried.
///
/// An entry is written before its upload starts and removed when its outcome is known; an
/// entry whose upload was delivered while no process listened is kept, marked delivered, until
/// the journal's copies of its events are acknowledged (a kill in between loses nothing).
///
/// The two kinds are kept apart: uploads under way in one blob, delivered entries carried from
/// an earlier launch in another, so that an upload's start and end write its own events (one
/// write, then a removal) and never the carried ones again.
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

    /// Which entries a change touched.
    enum Part {
        /// Uploads under way (not delivered).
        case open
        /// Delivered entries carried from an earlier launch.
        case delivered
        /// Both.
        case all
    }

    /// The delivered entries (every entry, in the layout of earlier versions).
    static let name = "background-uploads.json"
    /// The uploads under way.
    static let openName = "background-uploads-open.json"
    static let maximumCarried = 3

    let store: any ByteStore

    /// Every entry; one in both blobs (a write of both cut short) counts once, delivered if
    /// either says so.
    func load() -> [Entry] {
        var entries: [Entry] = []
        for entry in read(Self.name) + read(Self.openName) {
            if let index = entries.firstIndex(where: { $0.label == entry.label }) {
                if entry.delivered { entries[index] = entry }
            } else {
                entries.append(entry)
            }
        }
        return entries
    }

    /// Writes the entries of `part` (out of `entries`, all of them), the delivered ones first.
    func save(_ entries: [Entry], _ part: Part) throws {
        if part != .open { try write(entries.filter(\.delivered), to: Self.name) }
        if part != .delivered { try write(entries.filter { !$0.delivered }, to: Self.openName) }
    }

    private func read(_ name: String) -> [Entry] {
        guard let data = try? store.read(name), let entries = try? JSONDecoder().decode([Entry].self, from: data) else {
            return []
        }
        return entries
    }

    private func write(_ entries: [Entry], to name: String) throws {
        if entries.isEmpty {
            try store.remove(name)
        } else {
            try store.write(try JSONEncoder().encode(entries), to: name)
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
