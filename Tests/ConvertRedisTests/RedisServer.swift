import ConvertEnvironment
import ConvertRedis
import ConvertSynchronization
import ConvertTesting
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether these tests run under ThreadSanitizer: its slowdown, with the rest of the suite
/// running beside, makes wall-clock bounds of a few seconds meaningless, so tests that measure
/// "fast" check only the outcome there.
let underThreadSanitizer: Bool = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") != nil

/// A `redis-server` of the test's own on a free loopback port, with no persistence, in a
/// temporary directory; stopped (SIGTERM) when released.
final class RedisServer: Sendable {
    /// The `redis-server` executable, from `PATH`, `/usr/bin` or `/usr/sbin`.
    static let executable: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let directories = path.split(separator: ":").map(String.init) + ["/usr/bin", "/usr/sbin", "/usr/local/bin"]
        let found = directories.map { $0 + "/redis-server" }.first { FileManager.default.isExecutableFile(atPath: $0) }
        if found == nil {
            print("ConvertRedisTests: redis-server not found in PATH, /usr/bin or /usr/sbin; the tests against a real server are skipped")
        }
        return found
    }()

    static var isAvailable: Bool { executable != nil }

    let port: Int
    let password: String?
    /// Further `redis-server` options (`--cluster-enabled yes`, …).
    private let options: [String]
    /// Where the server works (its `--dir`).
    let directory: URL
    /// The running server's process id, 0 when stopped.
    private let pid = Locked<pid_t>(0)

    /// Starts a server and waits until it answers `PING`.
    init(password: String? = nil, port: Int? = nil, options: [String] = []) throws {
        _ = Self.orphansEnded
        self.password = password
        self.options = options
        self.port = try port ?? freeLoopbackPort()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("convert-redis-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try start()
    }

    /// Servers left running by an earlier test process that died without stopping them (a crash
    /// ends the process before any `deinit`), ended once per process: a leftover server keeps
    /// its port and its CPU, and skews whatever runs next on the machine.
    private static let orphansEnded: Void = {
        #if os(Linux)
        let temporary = FileManager.default.temporaryDirectory
        let names = (try? FileManager.default.contentsOfDirectory(atPath: temporary.path)) ?? []
        for name in names where name.hasPrefix("convert-redis-") {
            let directory = temporary.appendingPathComponent(name)
            guard let owner = try? String(contentsOf: directory.appendingPathComponent("owner"), encoding: .utf8),
                  case let fields = owner.split(whereSeparator: \.isWhitespace).compactMap({ pid_t($0) }), fields.count == 2
            else { continue }
            // The owner still runs (or its id was reused): not an orphan.
            guard sendSignal(fields[0], 0) != 0, errno == ESRCH else { continue }
            // The server is killed only when it works in this very directory (redis-server changes
            // into its `--dir`), so a reused process id never takes another process down.
            let workingDirectory = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(fields[1])/cwd")
            if workingDirectory.map({ URL(fileURLWithPath: $0).standardizedFileURL.path })
                == directory.standardizedFileURL.path {
                _ = sendSignal(fields[1], SIGKILL)
            }
            try? FileManager.default.removeItem(at: directory)
        }
        #endif
    }()

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// A configuration for this server with short deadlines.
    func configuration(keyPrefix: String = "", database: Int = 0, username: String? = nil,
                       password: String? = nil) -> RedisConfiguration {
        RedisConfiguration(port: port, username: username, password: password ?? self.password, database: database,
                           keyPrefix: keyPrefix, connectTimeout: .seconds(1),
                           // Under ThreadSanitizer a loaded machine can starve a call for seconds.
                           commandTimeout: underThreadSanitizer ? .seconds(30) : .seconds(2),
                           reconnectBackoffInitial: .milliseconds(20), reconnectBackoffMax: .milliseconds(200))
    }

    /// Starts the server (again, on the same port) and waits until it answers `PING`.
    func start() throws {
        guard let executable = Self.executable else { throw ServerError("redis-server is not installed") }
        var arguments = ["--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                         "--dir", directory.path, "--daemonize", "no", "--logfile", directory.appendingPathComponent("redis.log").path]
        if let password { arguments += ["--requirepass", password] }
        arguments += options
        let child = try spawnQuietly(executable, arguments)
        pid.set(child)
        try? Data("\(getpid()) \(child)".utf8).write(to: directory.appendingPathComponent("owner"))
        do {
            try waitUntilAnswering(child)
        } catch {
            kill()
            throw error
        }
    }

    /// Starts a server off the cooperative pool (starting one waits for it to answer, which would
    /// hold a cooperative thread meanwhile).
    static func started(password: String? = nil, options: [String] = []) async throws -> RedisServer {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try RedisServer(password: password, options: options) }) }.start()
        }
    }

    /// SIGTERM, then waits for the exit (SIGKILL after 5 s).
    func stop() { end(SIGTERM) }

    /// SIGSTOP: the server keeps its port and the kernel keeps accepting connections, but nothing
    /// is read or answered (a peer that hangs).
    func pause() { signalServer(SIGSTOP) }

    /// SIGCONT: a paused server goes on.
    func resume() { signalServer(SIGCONT) }

    private func signalServer(_ signal: Int32) {
        let child = pid.value
        if child > 0 { _ = sendSignal(child, signal) }
    }

    /// Runs `command` on a connection of its own (not a client under test), within 5 s.
    func command(_ command: RedisCommand) throws -> RESPValue {
        let connection = try RedisConnection(configuration: RedisConfiguration(port: port, password: password,
                                                                                 connectTimeout: .seconds(5), commandTimeout: .seconds(5)))
        defer { connection.close() }
        return try connection.send([command])[0]
    }

    /// A field of `INFO`'s answer (`total_connections_received`, `connected_clients`, …).
    func info(_ field: String) throws -> Int? {
        let text = try command(["INFO"]).stringValue ?? ""
        for line in text.split(whereSeparator: \.isNewline) where line.hasPrefix(field + ":") {
            return Int(line.dropFirst(field.count + 1))
        }
        return nil
    }

    /// SIGKILL, then waits for the exit: the server vanishes without closing anything itself.
    func kill() { end(SIGKILL) }

    private func end(_ signal: Int32) {
        let child = pid.withValue { current -> pid_t in
            defer { current = 0 }
            return current
        }
        guard child > 0 else { return }
        _ = sendSignal(child, signal)
        // A paused server takes the signal once it runs again.
        _ = sendSignal(child, SIGCONT)
        let deadline = ContinuousClock.now + .seconds(5)
        var status: Int32 = 0
        while waitpid(child, &status, WNOHANG) == 0 {
            if ContinuousClock.now >= deadline {
                _ = sendSignal(child, SIGKILL)
                _ = waitpid(child, &status, 0)
                return
            }
            usleep(2_000)
        }
    }

    private func waitUntilAnswering(_ child: pid_t) throws {
        var configuration = RedisConfiguration(port: port, password: password, connectTimeout: .milliseconds(200),
                                               commandTimeout: .milliseconds(500))
        configuration.poolSize = 1
        let deadline = ContinuousClock.now + .seconds(5)
        var lastError = "no attempt"
        while ContinuousClock.now < deadline {
            var status: Int32 = 0
            if waitpid(child, &status, WNOHANG) == child {
                pid.set(0)
                throw ServerError("redis-server exited: \(log)")
            }
            do {
                let connection = try RedisConnection(configuration: configuration)
                if try connection.send([["PING"]]).first?.stringValue == "PONG" { return }
            } catch {
                lastError = error.description
            }
            // Until the server listens each attempt is refused at once; wait a moment between them.
            usleep(5_000)
        }
        throw ServerError("redis-server did not answer PING within 5 s (\(lastError)): \(log)")
    }

    private var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("redis.log"), encoding: .utf8)) ?? ""
    }
}

struct ServerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// `kill(2)`, outside `RedisServer` whose own `kill` would shadow it.
private func sendSignal(_ pid: Int32, _ signal: Int32) -> Int32 { kill(pid, signal) }

/// A port the kernel just gave out on 127.0.0.1, and that nothing listens on now.
func freeLoopbackPort() throws -> Int {
    let listener = try LoopbackListener(backlog: 1)
    let port = listener.port
    listener.close()
    return port
}

/// A listening TCP socket on 127.0.0.1, for fake servers.
final class LoopbackListener: Sendable {
    let fd: Int32
    let port: Int

    init(backlog: Int32 = 16, port: Int = 0) throws {
        #if canImport(Darwin)
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #else
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        guard fd >= 0 else { throw ServerError("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, backlog) == 0 else {
            let message = String(cString: strerror(errno))
            _ = systemClose(fd)
            throw ServerError("bind/listen: \(message)")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.fd = fd
        self.port = Int(UInt16(bigEndian: actual.sin_port))
    }

    func close() {
        shutdown(fd, Int32(SHUT_RDWR))
        _ = systemClose(fd)
    }

    /// Makes `accept` fail from now on without closing the socket, for a listener whose accept
    /// thread closes it: closed here, its number could be reused by another test's socket before
    /// the thread's next `accept`, which would then take that socket's connections.
    func stopAccepting() {
        shutdown(fd, Int32(SHUT_RDWR))
        #if canImport(Darwin)
        _ = systemClose(fd)
        #endif
    }
}

/// A "server" that accepts connections, reads a request, and answers `reply` (bytes that are
/// not RESP2), then waits until the client closes the connection.
final class GarbageServer: Sendable {
    private let listener: LoopbackListener
    private let counts = Locked((accepted: 0, closedByClient: 0))

    var port: Int { listener.port }
    var accepted: Int { counts.value.accepted }
    var closedByClient: Int { counts.value.closedByClient }

    init(reply: [UInt8]) throws {
        listener = try LoopbackListener()
        let thread = Thread { [listener, counts] in
            while true {
                let client = accept(listener.fd, nil, nil)
                guard client >= 0 else {
                    #if !canImport(Darwin)
                    _ = systemClose(listener.fd)
                    #endif
                    return
                }
                counts.withValue { $0.accepted += 1 }
                let connection = Thread {
                    var buffer = [UInt8](repeating: 0, count: 4096)
                    if recv(client, &buffer, buffer.count, 0) > 0 {
                        _ = reply.withUnsafeBytes { send(client, $0.baseAddress, $0.count, sendWithoutSIGPIPE) }
                        while recv(client, &buffer, buffer.count, 0) > 0 {}
                        counts.withValue { $0.closedByClient += 1 }
                    }
                    _ = systemClose(client)
                }
                connection.start()
            }
        }
        thread.start()
    }

    deinit { listener.stopAccepting() }
}

private func systemClose(_ fd: Int32) -> Int32 { close(fd) }

/// Waits until `condition` holds, checking every few milliseconds, for at most `timeout`.
func eventually(timeout: Duration = .patience, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return true
}

/// The error `body` threw, or `nil` when it did not throw.
func redisError(_ body: () async throws -> Void) async -> RedisError? {
    do {
        try await body()
        return nil
    } catch let error as RedisError {
        return error
    } catch {
        Issue.record("threw \(error), not a RedisError")
        return nil
    }
}

/// A task executor with a thread of its own: tasks that prefer it run there, not on the
/// cooperative pool, so what they measure is theirs and not the wait for a pool thread the rest
/// of the suite keeps busy (the latency bounds of the fault tests are about the client).
final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
    // `@unchecked`: `jobs` is read and written under its lock only; the thread is the one reader.
    private let jobs = Locked<(queue: [UnownedJob], stopped: Bool)>(([], false))
    private let signal = DispatchSemaphore(value: 0)

    init(name: String) {
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withValue { $0.queue.append(job) }
        signal.signal()
    }

    /// Ends the thread once the jobs queued have run.
    func stop() {
        jobs.withValue { $0.stopped = true }
        signal.signal()
    }

    private func run() {
        while true {
            signal.wait()
            let (job, stopped) = jobs.withValue { jobs in (jobs.queue.isEmpty ? nil : jobs.queue.removeFirst(), jobs.stopped) }
            if let job {
                job.runSynchronously(on: asUnownedTaskExecutor())
            } else if stopped {
                return
            }
        }
    }
}
