import ConvertEnvironment
import ConvertStorage
import ConvertSynchronization
import ConvertVisitor
import Foundation

extension WriteBehindVisitorStore {
    /// Write-behind, claim and retry settings.
    public struct Options: Sendable, Hashable {
        /// How long changes gather before they are written.
        public var writeBehind: Duration
        /// Visitors written per backend round trip.
        public var batchSize: Int
        /// The first retry delay after a failed call; doubled up to `maximumRetryDelay` (no
        /// jitter). Also how long after a failure loads, claims and goal records answer at once
        /// without calling the backend (doubling likewise while it keeps failing).
        public var retryDelay: Duration
        /// The longest delay between retries.
        public var maximumRetryDelay: Duration
        /// Visitors with unwritten changes kept. The store keeps each one's data until it is
        /// written, beside the local store (which may evict it meanwhile): at most this many
        /// visitors' data more. Past it the oldest visitor's changes are dropped, not written
        /// (the local copy, while held, keeps them; the shared one misses them), counted in
        /// ``Counters/droppedWrites`` and told in the line that ends the outage.
        public var maximumPendingVisitors: Int
        /// When a visitor's first decision for an experience is claimed in the backend
        /// (``FirstDecisionClaim/beforeAnswering`` by default: every instance answers the same).
        public var firstDecisionClaim: FirstDecisionClaim
        /// How many of the visitors this instance loaded, claimed or wrote most recently are
        /// written again when the backend reports it lost its data; 0 turns it off.
        public var rewrittenAfterDataLoss: Int

        /// Settings for a store; the defaults suit a web server.
        public init(writeBehind: Duration = .milliseconds(20), batchSize: Int = 256, retryDelay: Duration = .milliseconds(200),
                    maximumRetryDelay: Duration = .seconds(5), maximumPendingVisitors: Int = 100_000,
                    firstDecisionClaim: FirstDecisionClaim = .beforeAnswering, rewrittenAfterDataLoss: Int = 10_000) {
            self.writeBehind = writeBehind
            self.batchSize = max(1, batchSize)
            self.retryDelay = retryDelay
            self.maximumRetryDelay = maximumRetryDelay
            self.maximumPendingVisitors = max(1, maximumPendingVisitors)
            self.firstDecisionClaim = firstDecisionClaim
            self.rewrittenAfterDataLoss = max(0, rewrittenAfterDataLoss)
        }

        /// The waits between failed writes, and the outage's fail-fast windows.
        var retryBackoff: Backoff { Backoff(initial: retryDelay, maximum: maximumRetryDelay) }
    }

    /// What the store did with the backend.
    public struct Counters: Sendable, Hashable, CustomStringConvertible {
        /// Loads answered by the backend.
        public var loads = 0
        /// Loads that failed or were not tried during an outage; their visitors were decided from
        /// what this instance holds.
        public var loadFailures = 0
        /// Visitors written to the backend.
        public var saves = 0
        /// Write round trips that failed (their visitors stay pending).
        public var saveFailures = 0
        /// Goals recorded through the backend.
        public var goalRecords = 0
        /// Goal records that could not reach the backend; this instance's dedup decided.
        public var goalRecordFailures = 0
        /// First decisions claimed in the backend.
        public var claims = 0
        /// Claims another instance had won (its variation holds, even when the same).
        public var claimsLost = 0
        /// Claims not answered (failed, or not tried during an outage): the local decision stood.
        public var claimFailures = 0
        /// Visitors whose changes are not yet written.
        public var pending = 0
        /// Visitors whose changes were dropped, not written, at ``Options/maximumPendingVisitors``.
        public var droppedWrites = 0
        /// Sticky decisions this instance wrote but another had stored first (the first kept).
        public var conflicts = 0
        /// Times the backend became unreachable.
        public var outages = 0
        /// Calls that failed in one part of the backend while the others answered (a cluster's
        /// master down or failing over, a slot not served for now): their visitors were decided
        /// from what this instance holds, and no outage began.
        public var partFailures = 0
        /// Visitors written again because the backend lost its data.
        public var rewrittenAfterDataLoss = 0

        public var description: String {
            "loads \(loads) (failed \(loadFailures)), claims \(claims) (lost \(claimsLost), failed \(claimFailures)), "
                + "saves \(saves) (failed \(saveFailures)), goal records \(goalRecords) (failed \(goalRecordFailures)), "
                + "pending \(pending), dropped writes \(droppedWrites), conflicts \(conflicts), outages \(outages), "
                + "part failures \(partFailures), rewritten after data loss \(rewrittenAfterDataLoss)"
        }
    }
}
