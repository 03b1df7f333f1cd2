extension WriterFiles {
    /// Calls `body` with the token of each writer that is gone (`nil`: the owner), holding its
    /// lock so that no process starts writing its files meanwhile: the owner when `own` is a
    /// writer beside it and the owner's lock is free, then every abandoned writer but `own`.
    /// Used to erase a forgotten visitor from files nobody would rewrite before the next start.
    func forEachStoppedWriter(excluding own: String?, _ body: (_ token: String?) throws -> Void) throws {
        if own != nil, let owner = try FileLock.acquire(ownerLock, create: false) {
            try withExtendedLifetime(owner) { try body(nil) }
        }
        for (other, otherLock) in abandonedWriters(excluding: own) {
            try withExtendedLifetime(otherLock) { try body(other) }
        }
    }
}
