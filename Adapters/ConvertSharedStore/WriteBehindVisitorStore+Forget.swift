import ConvertEnvironment
import ConvertStorage
import ConvertSynchronization

extension WriteBehindVisitorStore {
    // MARK: Forgetting

    /// Deletes the visitor's local copy and its changes not yet written behind; the backend
    /// keeps its record (``forget(_:)`` deletes it there too).
    public func removeData(for key: VisitorKey) {
        state.withValue { state in
            state.dirty[key] = nil
            state.stored[key] = nil
            state.awaitingClaims[key] = nil
        }
        local.removeData(for: key)
    }

    /// Deletes the visitor here and in the backend; `true` once the backend deleted it.
    public func forget(_ key: VisitorKey) async -> Bool {
        removeData(for: key)
        // A write already on its way would store the visitor again after the delete, and a
        // failed one marks it again: wait for it, then drop what it left.
        if state.withValue({ $0.inFlight[key] != nil }) {
            await waitForWrites { $0[key] != nil }
            removeData(for: key)
        }
        let started = clock.elapsed
        do {
            try await backend.delete(key)
            noteSuccess(startedAt: started)
            return true
        } catch {
            noteFailure(error, startedAt: started)
            warn("forget", "visitor data could not be deleted from \(backendName) (\(error))")
            return false
        }
    }
}
