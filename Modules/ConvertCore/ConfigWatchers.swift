import ConvertModel
import ConvertSynchronization

/// A config just installed, as the change streams see it.
struct InstalledChange: Sendable {
    /// The config it replaced; `nil` for the first.
    let previous: ProjectConfig?
    /// The config now installed.
    let next: ProjectConfig
    /// What differs from `previous`; `nil` for the first config.
    let changes: ConfigChanges?
}

/// Everyone following config changes: each is told of every config installed, in install order,
/// on the installing task, and finished when the SDK shuts down.
final class ConfigWatchers: Sendable {
    private struct Watcher {
        let changed: @Sendable (InstalledChange) -> Void
        let finish: @Sendable () -> Void
    }

    private struct State {
        var watchers: [UInt64: Watcher] = [:]
        var nextId: UInt64 = 0
        var closed = false
    }

    private let state = Locked(State())

    /// Adds a watcher; `nil` (and `finish` called at once) once the SDK is shut down.
    func add(changed: @escaping @Sendable (InstalledChange) -> Void, finish: @escaping @Sendable () -> Void) -> UInt64? {
        let id: UInt64? = state.withValue { state in
            guard !state.closed else { return nil }
            state.nextId += 1
            state.watchers[state.nextId] = Watcher(changed: changed, finish: finish)
            return state.nextId
        }
        if id == nil { finish() }
        return id
    }

    /// Removes the watcher `id` (its stream ended or was cancelled); unknown ids are ignored.
    func remove(_ id: UInt64) {
        state.withValue { _ = $0.watchers.removeValue(forKey: id) }
    }

    /// How many watchers are registered.
    var count: Int { state.withValue { $0.watchers.count } }

    /// Tells every watcher of `change`, outside the lock (a watcher may remove itself).
    func configInstalled(_ change: InstalledChange) {
        let watchers = state.withValue { state in state.watchers.sorted { $0.key < $1.key }.map(\.value) }
        for watcher in watchers { watcher.changed(change) }
    }

    /// Finishes every watcher and refuses new ones.
    func close() {
        let watchers = state.withValue { state -> [Watcher] in
            state.closed = true
            defer { state.watchers.removeAll() }
            return Array(state.watchers.values)
        }
        for watcher in watchers { watcher.finish() }
    }
}

extension SDKRuntime {
    /// Asks a source that can fetch on demand for a config now; `.updated` only when the
    /// installed config changed.
    func refreshConfig() async -> ConfigRefreshResult {
        guard let source = ports.configSource as? any RefreshableConfigSource else {
            return .failed("the config source cannot fetch on demand")
        }
        let before = current
        let result = await source.refresh()
        guard result == .updated else { return result }
        return current !== before ? .updated : .unchanged
    }
}
