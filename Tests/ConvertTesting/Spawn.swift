import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What ``spawnQuietly(_:_:)`` throws when the process cannot be started.
public struct SpawnFailure: Error, CustomStringConvertible {
    /// The executable and the system's reason.
    public let description: String
}

/// Starts `path` with `arguments` (a server a test runs), its input and outputs on /dev/null, with
/// no blocked and no ignored signals: `Process` would hand down the test thread's signal mask, and
/// a server with SIGTERM blocked never stops. Returns its process id; the caller waits for it.
public func spawnQuietly(_ path: String, _ arguments: [String]) throws -> pid_t {
    #if canImport(Darwin)
    var attributes: posix_spawnattr_t?
    var actions: posix_spawn_file_actions_t?
    #else
    var attributes = posix_spawnattr_t()
    var actions = posix_spawn_file_actions_t()
    #endif
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var noSignals = sigset_t()
    sigemptyset(&noSignals)
    posix_spawnattr_setsigmask(&attributes, &noSignals)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE] { sigaddset(&defaults, signal) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)

    let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var child: pid_t = 0
    let result = posix_spawn(&child, path, &actions, &attributes, argv, environ)
    guard result == 0 else { throw SpawnFailure(description: "posix_spawn \(path): \(String(cString: strerror(result)))") }
    return child
}
