import ConvertCore
import ConvertEvents
import ConvertModel
import ConvertSynchronization
import ConvertTesting
import Foundation
import Testing

/// How many locks a decision takes (debug builds count them). Threads deciding for different
/// visitors share none of them: the store shard follows the visitor's hash, the context's lock
/// is its own, and the SDK's decision state is read from the context's copy while it holds.
@Suite struct LockCountTests {
    private static let experience = "test-experience-ab-fullstack-1"

    @Test func aFreshDecisionTakesTwoLocksAndAStickyOneTakesOne() async throws {
        let harness = try await started(networkTracking: false)
        let context = qualifyingContext(harness, "lock-count-visitor")
        let fresh = LockTally.counting { context.variation(forExperience: Self.experience) }
        #expect(fresh.result?.isStored == false)
        // The context's lock and the store shard's, for the one write.
        #expect(fresh.locks == 2)

        // A new context for the returning visitor: creating it read the store, so the decision
        // takes the context's lock alone.
        let returning = qualifyingContext(harness, "lock-count-visitor")
        let sticky = LockTally.counting { returning.variation(forExperience: Self.experience) }
        #expect(sticky.result?.isStored == true)
        #expect(sticky.locks == 1)

        // The same context again: its lock and one store read.
        let again = LockTally.counting { returning.variation(forExperience: Self.experience) }
        #expect(again.result?.id == sticky.result?.id)
        #expect(again.locks == 2)

        // Detail and explanation take the same entry.
        #expect(LockTally.counting { returning.variationDetail(forExperience: Self.experience) }.locks == 2)
        let explained = LockTally.counting { returning.explanation(forExperience: Self.experience) }
        #expect(explained.result.variationId == sticky.result?.id)
        #expect(explained.locks == 2)
    }

    @Test func trackingAddsTheSinksLockAndNothingElse() async throws {
        let harness = try await started()
        let context = qualifyingContext(harness, "lock-count-tracked")
        let fresh = LockTally.counting { context.variation(forExperience: Self.experience) }
        #expect(fresh.result?.isStored == false)
        #expect(fresh.locks == 3)
        #expect(harness.sink.events.count == 1)
    }

    @Test func aContextSeesChangesMadeAfterItWasCreated() async throws {
        let harness = try await started()
        let heard = qualifyingContext(harness, "lock-count-heard")
        let untracked = qualifyingContext(harness, "lock-count-untracked")
        // Both contexts now hold a copy of the SDK's decision state.
        _ = heard.variation(forExperience: "missing-key")
        _ = untracked.variation(forExperience: "missing-key")

        let recorder = await EventRecorder(harness.sdk, events: [.bucketing])
        let variation = try #require(heard.variation(forExperience: Self.experience))
        let payloads = try await recorder.wait(for: .bucketing)
        guard case .bucketing(let payload) = payloads[0] else { throw Failure("bucketing payload") }
        #expect(payload.variationId == variation.id)
        #expect(harness.sink.events.count == 1)

        await harness.sdk.setTrackingEnabled(false)
        #expect(untracked.variation(forExperience: Self.experience) != nil)
        #expect(harness.sink.events.count == 1)
    }
}
