import ConvertStorage
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Thin POSIX file helpers: owner-only permissions, atomic replacement, appends that reach the
/// kernel before returning.
///
/// The storage directory may sit where another user of the machine can reach it: no open
/// follows a symbolic link (`O_NOFOLLOW`), every file read or appended to must be a regular
/// file, and a directory must belong to this user and be writable by no one else.
enum POSIXFile {
    static let ownerOnly: mode_t = 0o600

    static func failure(_ operation: String, _ path: String) -> StorageError {
        StorageError(operation: operation, target: path, reason: reason(errno))
    }

    /// `strerror` with the error's symbolic name, e.g. "Permission denied (EACCES)".
    static func reason(_ code: Int32) -> String {
        let names: [Int32: String] = [
            ENOENT: "ENOENT", EACCES: "EACCES", EPERM: "EPERM", EEXIST: "EEXIST", ENOSPC: "ENOSPC",
            EROFS: "EROFS", ENOTDIR: "ENOTDIR", EISDIR: "EISDIR", EMFILE: "EMFILE", ENFILE: "ENFILE",
            EIO: "EIO", EDQUOT: "EDQUOT", ENAMETOOLONG: "ENAMETOOLONG", EBUSY: "EBUSY", EAGAIN: "EAGAIN",
            ELOOP: "ELOOP", EFBIG: "EFBIG", EINVAL: "EINVAL",
        ]
        let text = String(cString: strerror(code))
        return names[code].map { "\(text) (\($0))" } ?? "\(text) (errno \(code))"
    }

    /// Creates `directory` (and parents) with owner-only access when missing.
    static func ensureDirectory(_ directory: URL) throws {
        var missing: [String] = []
        var path = directory.standardizedFileURL.path
        while !path.isEmpty, path != "/", !FileManager.default.fileExists(atPath: path) {
            missing.append(path)
            path = (path as NSString).deletingLastPathComponent
        }
        for component in missing.reversed() where mkdir(component, 0o700) != 0 && errno != EEXIST {
            throw failure("create directory", component)
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw StorageError(operation: "create directory", target: directory.path, reason: reason(ENOTDIR))
        }
        try checkOwnership(directory.path)
    }

    /// Refuses a directory another user owns (they could swap its files under us), and takes
    /// group and other write access away from one of ours.
    static func checkOwnership(_ path: String) throws {
        var info = stat()
        guard stat(path, &info) == 0 else { throw failure("inspect", path) }
        guard info.st_uid == geteuid() else {
            throw StorageError(operation: "use directory", target: path,
                               reason: "it belongs to user \(info.st_uid), not to this process's user \(geteuid())")
        }
        if info.st_mode & 0o022 != 0, chmod(path, 0o700) != 0 {
            throw StorageError(operation: "use directory", target: path,
                               reason: "others may write in it and its mode cannot be changed: \(reason(errno))")
        }
    }

    /// A name read from a file's content that may be joined to the directory: not empty, no
    /// `/`, not `.` or `..`, no NUL.
    static func isPlainName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.utf8.contains(UInt8(ascii: "/")) && !name.utf8.contains(0)
    }

    /// Whether `url` names a regular file itself (not through a link).
    static func isRegularFile(_ url: URL) -> Bool {
        var info = stat()
        return lstat(url.path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
    }

    /// `fd` when it is a regular file; otherwise it is closed and the refusal thrown.
    static func regularFileOrClosed(_ fd: Int32, _ path: String) throws -> Int32 {
        do {
            try requireRegularFile(fd, path)
        } catch {
            close(fd)
            throw error
        }
        return fd
    }

    /// Fails unless `fd` is a regular file (not a device, a FIFO or a directory).
    static func requireRegularFile(_ fd: Int32, _ path: String) throws {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw failure("inspect", path) }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw StorageError(operation: "open", target: path, reason: "not a regular file")
        }
    }

    /// Writes `data` to a temporary file beside `url`, then renames it over `url`.
    static func atomicWrite(_ data: Data, to url: URL) throws {
        let temp = url.path + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_TRUNC | O_CLOEXEC, ownerOnly)
        guard fd >= 0 else { throw failure("create", temp) }
        do {
            try writeAll(fd, data, path: temp)
            guard fsync(fd) == 0 else { throw failure("sync", temp) }
            close(fd)
        } catch {
            close(fd)
            unlink(temp)
            throw error
        }
        guard rename(temp, url.path) == 0 else {
            let error = failure("rename", url.path)
            unlink(temp)
            throw error
        }
    }

    static func writeAll(_ fd: Int32, _ data: Data, path: String) throws {
        try data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
            var offset = 0
            while offset < buffer.count {
                let written = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    throw failure("write", path)
                }
                offset += written
            }
        }
    }

    /// Opens `url` for appending, creating it owner-only.
    static func openForAppend(_ url: URL) throws -> Int32 {
        // Close-on-exec: a child process must not inherit descriptors (nor the locks beside them).
        let fd = open(url.path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, ownerOnly)
        guard fd >= 0 else { throw failure("open", url.path) }
        return try regularFileOrClosed(fd, url.path)
    }

    static func read(_ url: URL) throws -> Data? {
        try readBytes(url).map { Data($0) }
    }

    /// The bytes of `url` up to its end, `nil` when it does not exist.
    static func readBytes(_ url: URL) throws -> [UInt8]? {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw failure("open", url.path)
        }
        defer { close(fd) }
        try requireRegularFile(fd, url.path)
        var info = stat()
        var bytes: [UInt8] = []
        if fstat(fd, &info) == 0, info.st_size > 0 { bytes.reserveCapacity(Int(info.st_size)) }
        var chunk = [UInt8](repeating: 0, count: 256 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { readSome(fd, $0.baseAddress!, $0.count) }
            if count == 0 { return bytes }
            if count < 0 {
                if errno == EINTR { continue }
                throw failure("read", url.path)
            }
            bytes.append(contentsOf: chunk[0..<count])
        }
    }

    static func exists(_ url: URL) -> Bool { access(url.path, F_OK) == 0 }

    /// Renames `from` to `to`; false when `from` no longer exists.
    static func move(_ from: URL, to: URL) throws -> Bool {
        if rename(from.path, to.path) == 0 { return true }
        if errno == ENOENT { return false }
        throw failure("rename", from.path)
    }

    /// The names in `directory` (empty when it cannot be listed).
    static func names(in directory: URL) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
    }

    static func remove(_ url: URL) throws {
        guard unlink(url.path) == 0 || errno == ENOENT else { throw failure("remove", url.path) }
    }

    /// Moves a file that could not be read aside, as `<name>.corrupt-<unix time>`; returns the new path.
    @discardableResult
    static func quarantine(_ url: URL) -> String {
        let target = url.path + ".corrupt-\(Int(Date().timeIntervalSince1970))"
        _ = rename(url.path, target)
        return target
    }

    /// The permission bits of a file, for checks.
    static func permissions(_ path: String) -> Int? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int(info.st_mode & 0o777)
    }
}

/// `read(2)`, outside `POSIXFile` whose own `read` would shadow it.
private func readSome(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    read(fd, buffer, count)
}

/// An append-only file descriptor shared under a lock.
final class AppendFile: @unchecked Sendable {
    // `fd` is guarded by `lock`.
    private let lock = NSLock()
    private var fd: Int32
    let url: URL

    init(_ url: URL) throws {
        self.url = url
        fd = try POSIXFile.openForAppend(url)
    }

    deinit { close(fd) }

    func append(_ data: Data) throws {
        try lock.withLock { try POSIXFile.writeAll(fd, data, path: url.path) }
    }

    /// Replaces the file's content atomically and keeps appending to the new file.
    func replace(with data: Data) throws {
        try lock.withLock {
            try POSIXFile.atomicWrite(data, to: url)
            close(fd)
            fd = try POSIXFile.openForAppend(url)
        }
    }

    func sync() {
        lock.withLock { _ = fsync(fd) }
    }

    /// Cuts the file to its first `length` bytes (a torn last line), so appends start on a clean line.
    func truncate(to length: Int) throws {
        try lock.withLock {
            guard ftruncate(fd, off_t(length)) == 0 else { throw POSIXFile.failure("truncate", url.path) }
        }
    }
}
