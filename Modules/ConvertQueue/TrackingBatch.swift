import ConvertTracking
import ConvertVisitor
import Foundation

/// The tracking API's request body for one batch.
package struct TrackingBatch: Sendable, Hashable, Codable {
    /// One visitor's events in a batch.
    package struct Visitor: Sendable, Hashable, Codable {
        /// The visitor the events are about.
        package let visitorId: String
        /// The visitor's report segments, sent with the events; `nil` when none are known.
        package let segments: VisitorSegments?
        /// The visitor's events in this batch, in the order they were enqueued.
        package let events: [TrackingEvent.Payload]
    }

    /// Asks the server to enrich the events.
    package let enrichData: Bool
    /// The account of every event in the batch.
    package let accountId: String
    /// The project of every event in the batch.
    package let projectId: String
    /// Visitors in first-seen order.
    package let visitors: [Visitor]
    /// The `source` field (`"ios-sdk"`).
    package let source: String

    /// Groups `events` (all of one project) by visitor in first-seen order; a visitor's segments
    /// are the latest its events carry.
    package init(events: [TrackingEvent], source: String = "ios-sdk", enrichData: Bool = true) {
        let (first, next, segments) = Self.visitorGroups(events)
        self.enrichData = enrichData
        accountId = events.first?.accountId ?? ""
        projectId = events.first?.projectId ?? ""
        visitors = first.indices.map { visitor in
            var payloads: [TrackingEvent.Payload] = []
            var index = first[visitor]
            while index >= 0 {
                payloads.append(events[index].payload)
                index = next[index]
            }
            return Visitor(visitorId: events[first[visitor]].visitorId,
                           segments: segments[visitor] >= 0 ? events[segments[visitor]].segments : nil, events: payloads)
        }
        self.source = source
    }

    /// The number of events in the batch.
    package var eventCount: Int { visitors.reduce(0) { $0 + $1.events.count } }
}
