import ConvertSynchronization
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An executable a test runs as a child process, typically a server it then talks to over
/// loopback (see ``LoopbackHTTP``): running when the initializer returns, its standard output and
/// error collected until it ends, stopped with SIGTERM.
///
/// ```swift
/// let server = try ChildProcess(binary, environment: ["PORT": "\(port)", "REDIS_URL": nil])
/// defer { server.stop() }
/// // … requests …
/// let ended = try await server.terminate()
/// ```
public final class ChildProcess {
    /// The child process.
    public let process: Process
    /// Left when the process has ended and both of its outputs are read to their end.
    private let finished = DispatchGroup()
    private let out = Locked(Data()), err = Locked(Data())

    /// Starts `executable` with `arguments`, in this process's environment changed by
    /// `environment`: a key given `nil` is removed, any other is set. Throws when it cannot be
    /// started.
    public init(_ executable: URL, arguments: [String] = [], environment: [String: String?] = [:]) throws {
        let process = Process()
        process.executableURL = executable
        if !arguments.isEmpty { process.arguments = arguments }
        var inherited = ProcessInfo.processInfo.environment
        for (key, value) in environment { inherited[key] = value }
        process.environment = inherited
        let stdout = Pipe(), stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        self.process = process
        let finished = finished
        finished.enter()
        process.terminationHandler = { _ in finished.leave() }
        do {
            try process.run()
        } catch {
            process.terminationHandler = nil
            finished.leave()
            throw error
        }
        // Each pipe read on a thread of its own, so a chatty child never blocks on a full pipe.
        for (pipe, sink) in [(stdout, out), (stderr, err)] {
            finished.enter()
            Thread {
                sink.set(pipe.fileHandleForReading.readDataToEndOfFile())
                finished.leave()
            }.start()
        }
    }

    /// Sends SIGTERM; returns how the process ended and everything it printed.
    public func terminate() async throws -> ProcessOutcome {
        process.terminate()
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            finished.notify(queue: .global()) { done.resume() }
        }
        return ProcessOutcome(status: process.terminationStatus, out: out.value, err: err.value)
    }

    /// Sends SIGTERM when the process still runs: for a `defer` that leaves no child behind,
    /// whatever the test's outcome.
    public func stop() {
        if process.isRunning { process.terminate() }
    }
}

/// HTTP over loopback to a server a test started (see ``ChildProcess``).
public enum LoopbackHTTP {
    /// A request's answer, whatever its status; with `waitingForServer`, retried every 100 ms
    /// for up to 60 s while the server is not listening yet (a `URLError`).
    public static func request(_ method: String, _ url: String, cookie: String? = nil, waitingForServer: Bool = false)
        async throws -> (response: HTTPURLResponse, body: String) {
        guard let target = URL(string: url) else { throw LoopbackFailure(text: "not a URL: \(url)") }
        var request = URLRequest(url: target)
        request.httpMethod = method
        request.httpShouldHandleCookies = false
        if let cookie { request.setValue(cookie, forHTTPHeaderField: "Cookie") }
        let session = URLSession(configuration: .ephemeral)
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            do {
                let (body, response) = try await session.data(for: request)
                guard let http = response as? HTTPURLResponse else {
                    throw LoopbackFailure(text: "\(method) \(url): not an HTTP response")
                }
                return (http, String(decoding: body, as: UTF8.self))
            } catch let error as URLError where waitingForServer && ContinuousClock.now < deadline {
                _ = error
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    /// A loopback port nothing listens on now (the system's choice for a socket bound to port 0).
    public static func freePort() throws -> Int {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw LoopbackFailure(text: "no socket: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw LoopbackFailure(text: "no loopback port: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// What ``LoopbackHTTP`` throws when it cannot do what was asked.
private struct LoopbackFailure: Error, CustomStringConvertible {
    let text: String
    var description: String { text }
}
