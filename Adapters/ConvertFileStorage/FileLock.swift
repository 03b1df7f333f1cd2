import ConvertStorage
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive advisory lock (`flock`) on a file, held while this object lives. The kernel
/// releases it when the process ends, however it ends, so a free lock means its writer is gone.
final class FileLock: Sendable {
    let url: URL
    private let fd: Int32

    private init(url: URL, fd: Int32) {
        self.url = url
        self.fd = fd
    }

    deinit {
        // Unlocked, not only closed: a child process being started holds a copy of every
        // descriptor until it runs its program (close-on-exec acts only then), and a lock is
        // held while any copy of its descriptor is open.
        _ = flock(fd, LOCK_UN)
        close(fd)
    }

    /// Locks `url` without waiting. `nil` when someone else holds it, or when it does not exist
    /// and `create` is false.
    static func acquire(_ url: URL, create: Bool) throws -> FileLock? {
        let fd = open(url.path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), POSIXFile.ownerOnly)
        if fd < 0 {
            if errno == ENOENT && !create { return nil }
            throw POSIXFile.failure("open", url.path)
        }
        _ = try POSIXFile.regularFileOrClosed(fd, url.path)
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            let code = errno
            close(fd)
            if code == EWOULDBLOCK { return nil }
            errno = code
            throw POSIXFile.failure("lock", url.path)
        }
        return FileLock(url: url, fd: fd)
    }

    /// Creates and locks a new lock file named `prefix + token + ".lock"` with a fresh token.
    static func createUnique(in directory: URL, prefix: String) throws -> (token: String, lock: FileLock) {
        for _ in 0..<100 {
            let token = "\(getpid())-\(String(UInt64.random(in: 0...UInt64.max), radix: 16))"
            let url = directory.appendingPathComponent(prefix + token + ".lock")
            let fd = open(url.path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, POSIXFile.ownerOnly)
            if fd < 0 {
                if errno == EEXIST { continue }
                throw POSIXFile.failure("create", url.path)
            }
            close(fd)
            // Someone adopting abandoned writers may lock (and remove) the new file before we do.
            if let lock = try acquire(url, create: false), lock.isCurrent { return (token, lock) }
        }
        throw StorageError(operation: "create", target: directory.path, reason: "no unique lock file name")
    }

    /// Whether the path still names the locked file: whoever held the lock before may have
    /// removed it, and a lock on a removed file protects nothing.
    var isCurrent: Bool {
        var locked = stat(), named = stat()
        guard fstat(fd, &locked) == 0, stat(url.path, &named) == 0 else { return false }
        return locked.st_dev == named.st_dev && locked.st_ino == named.st_ino
    }

    /// Removes the lock file, then releases the lock (by closing, when this object goes).
    func removeFile() {
        unlink(url.path)
    }
}

/// How the files of one writer-shared file are named in its directory.
///
/// `<base>` is written by the owner, the process holding `<base>.lock`; every other process
/// writes `<base>.w-<token>`, holding `<base>.w-<token>.lock`. Files moved into a writer's
/// keeping are its segments, `<its file>.s-<token>`.
struct WriterFiles {
    let directory: URL
    let base: String

    var ownerLock: URL { directory.appendingPathComponent(base + ".lock") }
    var writerPrefix: String { base + ".w-" }

    /// The file of the writer with `token` (`nil`: the owner).
    func file(_ token: String?) -> URL {
        directory.appendingPathComponent(token.map { writerPrefix + $0 } ?? base)
    }

    func writerLock(_ token: String) -> URL { directory.appendingPathComponent(writerPrefix + token + ".lock") }

    /// The tokens of writers that have a lock file.
    func writerTokens() -> [String] {
        POSIXFile.names(in: directory).compactMap { name in
            guard name.hasPrefix(writerPrefix), name.hasSuffix(".lock") else { return nil }
            let token = name.dropFirst(writerPrefix.count).dropLast(5)
            return token.isEmpty || token.contains(".") ? nil : String(token)
        }.sorted()
    }

    /// The segments of `file`, oldest name first: regular files only (a link or a directory
    /// under a segment's name is not ours to move or read).
    func segments(of file: URL) -> [URL] {
        let prefix = file.lastPathComponent + ".s-"
        return POSIXFile.names(in: directory)
            .filter { $0.hasPrefix(prefix) && !$0.dropFirst(prefix.count).contains(".") }
            .sorted()
            .map { directory.appendingPathComponent($0) }
            .filter(POSIXFile.isRegularFile)
    }

    /// A new segment name for `file`.
    func newSegment(of file: URL) -> URL {
        let token = "\(getpid())-\(String(UInt64.random(in: 0...UInt64.max), radix: 16))"
        return directory.appendingPathComponent(file.lastPathComponent + ".s-" + token)
    }

    /// Removes temporary files left beside `file` by a writer killed while replacing it. Only
    /// for a file whose writer is known gone (its lock is held by the caller).
    func removeTemporaryFiles(of file: URL) {
        let prefix = file.lastPathComponent + ".tmp-"
        for name in POSIXFile.names(in: directory) where name.hasPrefix(prefix) {
            try? POSIXFile.remove(directory.appendingPathComponent(name))
        }
    }

    /// Locks the writers whose process is gone (their lock is free), skipping `own`.
    func abandonedWriters(excluding own: String?) -> [(token: String, lock: FileLock)] {
        writerTokens().compactMap { token in
            guard token != own, let lock = try? FileLock.acquire(writerLock(token), create: false), lock.isCurrent else {
                return nil
            }
            return (token, lock)
        }
    }
}
