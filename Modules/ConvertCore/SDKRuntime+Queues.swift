import ConvertTracking
import ConvertEvents
import ConvertStorage

extension SDKRuntime {
    /// Delivers pending tracking events, then writes pending visitor data (the JavaScript SDK's
    /// `releaseQueues`: the API queue and the data store queue).
    func releaseQueues() async {
        await ports.trackingSink.flush()
        await writeVisitorData()
    }

    /// ``releaseQueues()`` waiting at most `timeout` for the tracking events; `true` once every
    /// event enqueued before the call is settled.
    func releaseQueues(timeout: Duration) async -> Bool {
        let settled = await ports.trackingSink.flush(timeout: timeout)
        await writeVisitorData()
        return settled
    }

    /// Writes the visitor store's pending changes; announces them when there were some.
    func writeVisitorData() async {
        let written = await ports.visitorStore.flush()
        if written > 0 {
            events.publish(.dataStoreQueueReleased, .dataStoreQueueReleased(DataStoreQueueReleasedPayload(recordCount: written)))
        }
    }
}
