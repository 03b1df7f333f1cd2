// The one file of this adapter that imports another adapter: the default local copy is the
// memory store. The store itself works on any `VisitorDataStore`.
import ConvertEnvironment
import ConvertMemory
import ConvertStorage

extension SharedVisitorStore {
    /// A shared store over `backend`, holding up to `capacity` visitors locally in a
    /// `MemoryVisitorDataStore`.
    public convenience init(backend: any VisitorDataBackend, capacity: Int = MemoryVisitorDataStore.defaultCapacity,
                            options: Options = Options(), log: SDKLog = .silent, clock: any SleepClock = .continuous) {
        self.init(backend: backend, local: MemoryVisitorDataStore(capacity: capacity), options: options, log: log, clock: clock)
    }
}
