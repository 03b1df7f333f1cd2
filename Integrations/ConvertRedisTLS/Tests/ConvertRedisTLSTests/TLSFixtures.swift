import ConvertRedis
import ConvertTesting
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An executable from `PATH`, `/usr/bin`, `/usr/sbin` or `/usr/local/bin`.
func executable(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
    let directories = path.split(separator: ":").map(String.init) + ["/usr/bin", "/usr/sbin", "/usr/local/bin"]
    return directories.map { $0 + "/" + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
}

/// Why the tests against a real TLS server cannot run here, if they cannot.
let missingTools: String? = {
    let missing = ["redis-server", "openssl"].filter { executable($0) == nil }
    guard !missing.isEmpty else { return nil }
    let reason = "\(missing.joined(separator: " and ")) not found in PATH, /usr/bin or /usr/sbin: the TLS tests are skipped"
    print("ConvertRedisTLSTests: \(reason)")
    return reason
}()

struct TestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Certificates made with `openssl` in a temporary directory: a CA, a server certificate for
/// 127.0.0.1 and localhost, an expired one, one for another name, a client certificate, and a
/// second CA the servers' certificates do not chain to.
final class Certificates: Sendable {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("convert-redis-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try authority("ca", subject: "/CN=Convert Test CA")
        try authority("other-ca", subject: "/CN=Convert Other CA")
        try issue("server", subject: "/CN=localhost", extensions: "subjectAltName=IP:127.0.0.1,DNS:localhost")
        try issue("expired", subject: "/CN=localhost", extensions: "subjectAltName=IP:127.0.0.1,DNS:localhost", days: -1)
        try issue("other-name", subject: "/CN=other.example", extensions: "subjectAltName=DNS:other.example")
        try issue("client", subject: "/CN=convert-client", extensions: "extendedKeyUsage=clientAuth")
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    private func authority(_ name: String, subject: String) throws {
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                     "-keyout", path("\(name).key"), "-out", path("\(name).crt"), "-days", "2", "-subj", subject])
    }

    private func issue(_ name: String, subject: String, extensions: String, days: Int = 2) throws {
        try Data((extensions + "\n").utf8).write(to: directory.appendingPathComponent("\(name).ext"))
        try openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                     "-keyout", path("\(name).key"), "-out", path("\(name).csr"), "-subj", subject])
        // A negative validity ends the certificate before it begins: expired now.
        try openssl(["x509", "-req", "-in", path("\(name).csr"), "-CA", path("ca.crt"), "-CAkey", path("ca.key"),
                     "-CAcreateserial", "-out", path("\(name).crt"), "-days", "\(days)", "-extfile", path("\(name).ext")])
    }

    private func openssl(_ arguments: [String]) throws {
        guard let openssl = executable("openssl") else { throw TestError("openssl is not installed") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: openssl)
        process.arguments = arguments
        process.currentDirectoryURL = directory
        let errors = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        try process.run()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestError("openssl \(arguments.first ?? ""): \(String(decoding: message, as: UTF8.self))")
        }
    }
}

/// A `redis-server` of the test's own on 127.0.0.1: TLS on one port (with the certificate and
/// key given), plaintext on another unless `plaintext` is false; stopped when released.
final class TLSRedisServer: Sendable {
    let tlsPort: Int
    let plainPort: Int
    private let directory: URL
    private let pid: pid_t

    init(certificates: Certificates, certificate: String = "server", password: String? = nil,
         requireClientCertificates: Bool = false, tls: Bool = true, options: [String] = []) throws {
        guard let redis = executable("redis-server") else { throw TestError("redis-server is not installed") }
        tlsPort = tls ? try freeLoopbackPort() : 0
        plainPort = try freeLoopbackPort()
        directory = certificates.directory.appendingPathComponent("redis-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var arguments = ["--port", "\(plainPort)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                         "--dir", directory.path, "--daemonize", "no", "--logfile", directory.appendingPathComponent("redis.log").path]
        if tls {
            arguments += ["--tls-port", "\(tlsPort)", "--tls-cert-file", certificates.path("\(certificate).crt"),
                          "--tls-key-file", certificates.path("\(certificate).key"), "--tls-ca-cert-file", certificates.path("ca.crt"),
                          "--tls-auth-clients", requireClientCertificates ? "yes" : "no"]
        }
        if let password { arguments += ["--requirepass", password] }
        arguments += options
        pid = try spawnQuietly(redis, arguments)
        do {
            try waitUntilListening()
        } catch {
            stop()
            throw error
        }
    }

    deinit { stop() }

    private func waitUntilListening() throws {
        let deadline = ContinuousClock.now + .seconds(10)
        var status: Int32 = 0
        while ContinuousClock.now < deadline {
            if waitpid(pid, &status, WNOHANG) == pid { throw TestError("redis-server exited: \(log)") }
            if accepts(plainPort) && (tlsPort == 0 || accepts(tlsPort)) { return }
            usleep(10_000)
        }
        throw TestError("redis-server did not listen within 10 s: \(log)")
    }

    private var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("redis.log"), encoding: .utf8)) ?? ""
    }

    private func stop() {
        _ = kill(pid, SIGTERM)
        let deadline = ContinuousClock.now + .seconds(5)
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            if ContinuousClock.now >= deadline {
                _ = kill(pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                return
            }
            usleep(2_000)
        }
    }
}

/// Whether something accepts TCP connections on 127.0.0.1:`port`.
func accepts(_ port: Int) -> Bool {
    let fd = tcpSocket()
    guard fd >= 0 else { return false }
    defer { _ = close(fd) }
    var address = loopback(port)
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    } == 0
}

func tcpSocket() -> Int32 {
    #if canImport(Darwin)
    socket(AF_INET, SOCK_STREAM, 0)
    #else
    socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #endif
}

func loopback(_ port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return address
}

/// A listening socket on 127.0.0.1 with a port the kernel chose.
func listener() throws -> (fd: Int32, port: Int) {
    let fd = tcpSocket()
    guard fd >= 0 else { throw TestError("socket: \(String(cString: strerror(errno)))") }
    var one: Int32 = 1
    _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    var address = loopback(0)
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0, listen(fd, 16) == 0 else {
        let message = String(cString: strerror(errno))
        _ = close(fd)
        throw TestError("bind/listen: \(message)")
    }
    var actual = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &actual) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return (fd, Int(UInt16(bigEndian: actual.sin_port)))
}

/// A port the kernel just gave out on 127.0.0.1, and that nothing listens on now.
func freeLoopbackPort() throws -> Int {
    let (fd, port) = try listener()
    _ = close(fd)
    return port
}

/// A TCP proxy on 127.0.0.1 that forwards every connection to `target` and records the bytes
/// that cross it, both ways.
final class RecordingProxy: @unchecked Sendable {
    let port: Int
    private let fd: Int32
    private let lock = NSLock()
    private var bytes: [UInt8] = []

    init(target: Int) throws {
        (fd, port) = try listener()
        Thread { [self] in
            while true {
                let client = accept(fd, nil, nil)
                guard client >= 0 else {
                    _ = close(fd)
                    return
                }
                let upstream = tcpSocket()
                var address = loopback(target)
                let connected = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                }
                guard connected == 0 else {
                    _ = close(client)
                    _ = close(upstream)
                    continue
                }
                Thread { [self] in forward(client, upstream) }.start()
            }
        }.start()
    }

    deinit {
        shutdown(fd, Int32(SHUT_RDWR))
    }

    /// Everything that crossed the proxy so far.
    var recorded: [UInt8] {
        lock.lock()
        defer { lock.unlock() }
        return bytes
    }

    private func forward(_ a: Int32, _ b: Int32) {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var entries = [pollfd(fd: a, events: Int16(POLLIN), revents: 0), pollfd(fd: b, events: Int16(POLLIN), revents: 0)]
        loop: while poll(&entries, 2, -1) >= 0 {
            for (index, entry) in entries.enumerated() where entry.revents != 0 {
                let from = index == 0 ? a : b, to = index == 0 ? b : a
                let count = recv(from, &buffer, buffer.count, 0)
                guard count > 0 else { break loop }
                lock.lock()
                bytes += buffer[0..<count]
                lock.unlock()
                _ = buffer.withUnsafeBytes { send(to, $0.baseAddress, count, noSignal) }
            }
        }
        _ = close(a)
        _ = close(b)
    }
}

extension Array where Element == UInt8 {
    /// Whether `text` occurs in these bytes.
    func contains(text: String) -> Bool {
        let needle = Array(text.utf8)
        guard !needle.isEmpty, count >= needle.count else { return false }
        return (0...(count - needle.count)).contains { start in self[start..<start + needle.count].elementsEqual(needle) }
    }
}

#if canImport(Darwin)
private let noSignal: Int32 = 0
#else
private let noSignal = Int32(MSG_NOSIGNAL)
#endif

