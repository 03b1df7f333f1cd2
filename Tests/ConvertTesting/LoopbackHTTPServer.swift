import ConvertEnvironment
import ConvertSynchronization
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A small HTTP/1.1 server on 127.0.0.1 for tests: one request per connection, a handler that
/// answers, drops the connection, or stalls — enough to exercise a real client on the wire.
///
/// ```swift
/// let server = try LoopbackHTTPServer { request in .respond(status: 200, body: configBytes) }
/// let endpoint = server.baseURL   // "http://127.0.0.1:<port>"
/// ```
public final class LoopbackHTTPServer: Sendable {
    /// A request as it arrived.
    public struct Request: Sendable {
        /// The method as sent (`GET`, `POST`).
        public let method: String
        /// The path without the query.
        public let path: String
        /// Query items in order (percent-decoded).
        public let query: [(name: String, value: String)]
        /// Header fields with lowercased names.
        public let headers: [String: String]
        /// The body, empty when there was none.
        public let body: Data

        /// The value of header `name` (case-insensitive); `nil` when absent.
        public func header(_ name: String) -> String? { headers[name.lowercased()] }
        /// The value of the first query item named `name`; `nil` when absent.
        public func queryValue(_ name: String) -> String? { query.first { $0.name == name }?.value }
    }

    /// How the server answers one request.
    public indirect enum Reply: Sendable {
        /// Answer with `status`, `headers` and `body` (`Content-Length` is added).
        case respond(status: Int, headers: [String: String] = [:], body: Data = Data())
        /// Close the connection without answering (the client sees a broken connection).
        case drop
        /// Wait, then answer as `then` says.
        case delay(Duration, then: Reply)
        /// A hostile or broken peer: the head with exactly these headers (no `Content-Length`
        /// of the server's own), then `chunk` written `repeats` times — as chunked frames when
        /// `chunked` — or until the client goes away.
        case stream(status: Int, headers: [String: String], chunk: Data, repeats: Int, chunked: Bool)
    }

    /// Chooses the reply to each request; called on the connection's own thread.
    public typealias Handler = @Sendable (Request) -> Reply

    private struct State {
        var handler: Handler
        var received: [Request] = []
        var listener: Int32 = -1
        var port = 0
    }

    private let state: Locked<State>

    /// The port the server listens on (kept across ``restart()``).
    public var port: Int { state.withValue { $0.port } }

    /// Whether a connection serves further requests after a response (HTTP keep-alive), unless
    /// the request says `Connection: close`.
    public let keepsConnectionsAlive: Bool

    /// Starts listening on an ephemeral port; with `keepsConnectionsAlive`, connections stay open
    /// between requests, as a production server's do.
    public init(keepsConnectionsAlive: Bool = false, handler: @escaping Handler) throws {
        state = Locked(State(handler: handler))
        self.keepsConnectionsAlive = keepsConnectionsAlive
        try listen(on: 0)
    }

    deinit { stop() }

    /// `http://127.0.0.1:<port>`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Every request received so far, in arrival order.
    public var requests: [Request] { state.withValue { $0.received } }

    /// Replaces the handler.
    public func setHandler(_ handler: @escaping Handler) { state.withValue { $0.handler = handler } }

    /// Stops listening; connections in progress finish.
    public func stop() {
        let fd: Int32 = state.withValue { state in
            defer { state.listener = -1 }
            return state.listener
        }
        if fd >= 0 {
            shutdown(fd, Int32(SHUT_RDWR))
            #if canImport(Darwin)
            close(fd)
            #endif
            // Elsewhere the accept thread closes the socket once `accept` fails: closed here, its
            // number could be reused by another test's socket before the thread's next `accept`,
            // which would then take that socket's connections.
        }
    }

    /// Stops and listens again on the same port.
    public func restart() throws {
        stop()
        var lastError: (any Error)?
        for _ in 0..<50 {
            do {
                try listen(on: port)
                return
            } catch {
                lastError = error
                Thread.sleep(forTimeInterval: 0.02)
            }
        }
        throw lastError!
    }

    private struct SocketError: Error, CustomStringConvertible {
        let description: String
    }

    private func listen(on requestedPort: Int) throws {
        #if canImport(Darwin)
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #else
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        guard fd >= 0 else { throw SocketError(description: "socket: \(String(cString: strerror(errno)))") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(requestedPort).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, startListening(fd) == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw SocketError(description: "bind/listen: \(message)")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        state.withValue { state in
            state.port = Int(UInt16(bigEndian: actual.sin_port))
            state.listener = fd
        }
        let thread = Thread { [weak self] in self?.acceptLoop(fd) }
        thread.name = "loopback-http.accept"
        thread.start()
    }

    private func acceptLoop(_ fd: Int32) {
        while true {
            let client = accept(fd, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                #if !canImport(Darwin)
                close(fd)
                #endif
                return
            }
            var noSigpipe: Int32 = 1
            #if canImport(Darwin)
            setsockopt(client, SOL_SOCKET, SO_NOSIGPIPE, &noSigpipe, socklen_t(MemoryLayout<Int32>.size))
            #else
            _ = noSigpipe
            #endif
            // A thread per connection, not a dispatch queue: a stalled reply must not occupy the
            // dispatch pool that Swift concurrency runs on.
            let worker = Thread { [weak self] in
                self?.serve(client)
                close(client)
            }
            worker.stackSize = 256 * 1024
            worker.start()
        }
    }

    private func serve(_ client: Int32) {
        while let request = readRequest(client) {
            let handler: Handler = state.withValue { state in
                state.received.append(request)
                return state.handler
            }
            var reply = handler(request)
            while case .delay(let duration, let then) = reply {
                let (seconds, attoseconds) = duration.components
                Thread.sleep(forTimeInterval: Double(seconds) + Double(attoseconds) / 1e18)
                reply = then
            }
            if case .stream(let status, let headers, let chunk, let repeats, let chunked) = reply {
                var head = "HTTP/1.1 \(status) \(Self.reason(status))\r\nConnection: close\r\n"
                if chunked { head += "Transfer-Encoding: chunked\r\n" }
                for (name, value) in headers { head += "\(name): \(value)\r\n" }
                guard send(client, Data((head + "\r\n").utf8)) else { return }
                var frame = chunk
                if chunked {
                    frame = Data((String(chunk.count, radix: 16) + "\r\n").utf8) + chunk + Data("\r\n".utf8)
                }
                for _ in 0..<repeats where !send(client, frame) { break }
                if chunked { _ = send(client, Data("0\r\n\r\n".utf8)) }
                return
            }
            guard case .respond(let status, let headers, let body) = reply else { return }
            let keepOpen = keepsConnectionsAlive && request.header("Connection")?.lowercased() != "close"
            var head = "HTTP/1.1 \(status) \(Self.reason(status))\r\nContent-Length: \(body.count)\r\n"
            head += "Connection: \(keepOpen ? "keep-alive" : "close")\r\n"
            for (name, value) in headers { head += "\(name): \(value)\r\n" }
            head += "\r\n"
            var out = Data(head.utf8)
            out.append(body)
            send(client, out)
            if !keepOpen { return }
        }
    }

    /// Whether all of `data` went out (`false` once the client has gone).
    @discardableResult
    private func send(_ client: Int32, _ data: Data) -> Bool {
        data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) -> Bool in
            var offset = 0
            while offset < buffer.count {
                #if canImport(Darwin)
                let n = Darwin.send(client, buffer.baseAddress! + offset, buffer.count - offset, 0)
                #else
                let n = Glibc.send(client, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
                #endif
                if n <= 0 { return false }
                offset += n
            }
            return true
        }
    }

    private func readRequest(_ client: Int32) -> Request? {
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let separator = Data("\r\n\r\n".utf8)
        var headerEnd: Range<Data.Index>?
        while headerEnd == nil {
            let n = recv(client, &chunk, chunk.count, 0)
            if n <= 0 { return nil }
            data.append(contentsOf: chunk[0..<n])
            headerEnd = data.range(of: separator)
            if data.count > 1 << 20 { return nil }
        }
        let headText = String(decoding: data[..<headerEnd!.lowerBound], as: UTF8.self)
        var lines = headText.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count >= 2 else { return nil }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        if headers["expect"]?.lowercased() == "100-continue" {
            send(client, Data("HTTP/1.1 100 Continue\r\n\r\n".utf8))
        }
        var body = Data(data[headerEnd!.upperBound...])
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while body.count < length {
            let n = recv(client, &chunk, min(chunk.count, length - body.count), 0)
            if n <= 0 { return nil }
            body.append(contentsOf: chunk[0..<n])
        }
        let target = String(requestLine[1])
        let components = URLComponents(string: target)
        let query = (components?.queryItems ?? []).map { ($0.name, $0.value ?? "") }
        return Request(method: String(requestLine[0]), path: components?.path ?? target, query: query,
                       headers: headers, body: body)
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 204: return "No Content"
        case 304: return "Not Modified"
        case 400: return "Bad Request"
        case 404: return "Not Found"
        case 500: return "Internal Server Error"
        case 503: return "Service Unavailable"
        default: return "Status"
        }
    }
}

private func startListening(_ fd: Int32) -> Int32 {
    listen(fd, 128)
}
