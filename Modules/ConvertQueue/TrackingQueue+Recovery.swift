import ConvertEnvironment
import ConvertStorage
import ConvertTracking
import Foundation

extension TrackingQueue {
    /// The events a journal still holds from an earlier run, oldest first; unreadable records
    /// are acknowledged (dropped) and counted in a log line.
    static func recoverEvents(from journal: any EventJournal, log: SDKLog) -> [(sequence: UInt64, event: TrackingEvent)] {
        do {
            let decoder = JSONDecoder()
            var recovered: [(sequence: UInt64, event: TrackingEvent)] = []
            var unreadable: [UInt64] = []
            for record in try journal.pending() {
                if let event = try? decoder.decode(TrackingEvent.self, from: record.payload) {
                    recovered.append((record.sequence, event))
                } else {
                    unreadable.append(record.sequence)
                }
            }
            if !unreadable.isEmpty {
                log.warn("tracking journal: \(unreadable.count) unreadable record(s) dropped")
                try? journal.acknowledge(unreadable)
            }
            if !recovered.isEmpty { log.info("tracking queue: \(recovered.count) journaled event(s) recovered") }
            return recovered
        } catch {
            log.error("tracking journal unreadable: \(error)")
            return []
        }
    }
}
