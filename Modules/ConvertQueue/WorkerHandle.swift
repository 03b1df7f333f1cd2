import ConvertSynchronization

/// The delivery loop's task, reachable without the actor so a released owner can stop it.
final class WorkerHandle: Sendable {
    private let task = Locked<Task<Void, Never>?>(nil)

    func set(_ task: Task<Void, Never>) { self.task.set(task) }

    var isRunning: Bool { task.value.map { !$0.isCancelled } ?? false }

    func cancel() { task.value?.cancel() }

    /// Waits until the loop has returned.
    func finished() async {
        await task.value?.value
    }
}
