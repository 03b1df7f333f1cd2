import Foundation

/// The delivery loop's task, reachable without the actor so a released owner can stop it.
final class WorkerHandle: @unchecked Sendable {
    // `task` is guarded by `lock`.
    private let lock = NSLock()
    private var task: Task<Void, Never>?

    func set(_ task: Task<Void, Never>) { lock.withLock { self.task = task } }

    var isRunning: Bool { lock.withLock { task.map { !$0.isCancelled } ?? false } }

    func cancel() { lock.withLock { task?.cancel() } }

    /// Waits until the loop has returned.
    func finished() async {
        let task = lock.withLock { self.task }
        await task?.value
    }
}
