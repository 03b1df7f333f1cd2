import ConvertEnvironment
import ConvertStorage
import ConvertTracking
import ConvertVisitor
import Foundation

extension TrackingQueue {
    /// Journals `event` (when there is a journal) and queues it; never waits for the network.
    public nonisolated func enqueue(_ event: TrackingEvent) {
        _ = offer(event)
    }

    /// ``enqueue(_:)``, saying whether the event was taken (`false`: full, shut down, or too
    /// large to send).
    public nonisolated func offer(_ event: TrackingEvent) -> Bool {
        if let size = oversize(event) {
            return refuse("a tracking event of \(size) bytes is over the \(options.maximumBatchBytes)-byte request limit")
        }
        var sequence: UInt64?
        if let journal {
            guard buffer.hasRoom else { return refuse() }
            do {
                sequence = try journal.append(try JSONEncoder().encode(event), visitor: VisitorKey(
                    accountId: event.accountId, projectId: event.projectId, visitorId: event.visitorId))
            } catch {
                log.error("tracking journal append failed, event kept in memory only: \(error)")
            }
        }
        switch buffer.append(sequence: sequence, event: event, batchSize: options.batchSize,
                             fullBatch: options.maximumBatchEvents) {
        case .dropped:
            if let sequence { try? journal?.acknowledge([sequence]) }
            return refuse()
        case .wakeNow, .first:
            wake.signal()
        case .queued:
            break
        }
        return true
    }

    /// Counts a refused event and logs the refusals at most once per 10 s, with `reason` (the
    /// queue's state when none is given).
    private nonisolated func refuse(_ reason: @autoclosure () -> String? = nil) -> Bool {
        if let count = buffer.countDrop() {
            let why = reason() ?? (buffer.isOpen ? "tracking queue full (\(options.capacity))" : "tracking queue shut down")
            log.warn("\(why): \(count) event(s) dropped since the last warning, \(buffer.counters.dropped) in all")
        }
        return false
    }

    /// The size of the request body `event` would make alone, when over `maximumBatchBytes`;
    /// `nil` when it fits. Only an event whose text could come near the bound is encoded.
    nonisolated func oversize(_ event: TrackingEvent) -> Int? {
        guard Self.sizeBound(event) > options.maximumBatchBytes,
              let body = try? TrackingBatch.body(of: [event], source: options.source, enrichData: options.enrichData),
              body.count > options.maximumBatchBytes else { return nil }
        return body.count
    }

    /// At least the bytes of `event`'s body alone: every string escaped at worst (6 bytes a
    /// byte), every number at its longest, the keys and punctuation counted generously.
    static func sizeBound(_ event: TrackingEvent) -> Int {
        func text(_ string: String) -> Int { 6 * string.utf8.count + 8 }
        var bound = 512 + text(event.accountId) + text(event.projectId) + text(event.visitorId)
        if let segments = event.segments {
            // Summed one by one: an array of them would be allocated for every event queued.
            bound += (segments.country.map(text) ?? 0) + (segments.browser.map(text) ?? 0) + (segments.source.map(text) ?? 0)
            bound += (segments.campaign.map(text) ?? 0) + (segments.visitorType.map(text) ?? 0)
            bound += 64 + (segments.devices ?? []).reduce(0) { $0 + text($1) }
            bound += 64 + (segments.customSegments ?? []).reduce(0) { $0 + text($1) }
        }
        switch event.payload {
        case .bucketing(let experienceId, let variationId):
            bound += text(experienceId) + text(variationId)
        case .conversion(let goalId, let goalData, let bucketingData):
            bound += text(goalId)
            for item in goalData ?? [] { bound += 64 + item.valueSizeBound }
            for (experience, variation) in bucketingData ?? [:] { bound += text(experience) + text(variation) }
        }
        return bound
    }
}
