import ConvertTransport
import Foundation

/// Behaviour every ``HTTPTransport`` adapter must show, checked against a real HTTP server on
/// loopback. Run it from your own tests:
///
/// ```swift
/// try await HTTPTransportContract.verify(MyTransport())
/// ```
public enum HTTPTransportContract {
    /// Checks `transport`: status, headers and body in both directions, non-2xx answers as
    /// responses (not errors), a dropped connection and a timeout as ``TransportError``s, a
    /// cancelled request as an error, and no POST sent twice.
    public static func verify(_ transport: any HTTPTransport) async throws {
        let server = try LoopbackHTTPServer(keepsConnectionsAlive: true) { request in
            switch request.path {
            case "/echo":
                return .respond(status: 201, headers: ["X-Echo": request.header("X-Probe") ?? "", "Content-Type": "text/plain"],
                                body: request.body)
            case "/refuse": return .respond(status: 404, body: Data("no".utf8))
            case "/fail": return .respond(status: 503)
            case "/drop": return .drop
            case "/slow": return .delay(.seconds(10), then: .respond(status: 200))
            default: return .respond(status: 200, body: Data("ok".utf8))
            }
        }
        defer { server.stop() }
        func url(_ path: String) throws -> URL {
            guard let url = URL(string: server.baseURL + path) else { throw ContractViolation("bad URL \(path)") }
            return url
        }

        let body = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let echoed = try await transport.send(HTTPRequest(method: .post, url: try url("/echo"),
                                                          headers: [("X-Probe", "p-1"), ("Content-Type", "application/octet-stream")],
                                                          body: body, timeout: .seconds(10)))
        try check(echoed.status == 201, "status 201 came back as \(echoed.status)")
        try check(echoed.body == body, "the body did not round-trip byte for byte")
        try check(echoed.header("x-echo") == "p-1" && echoed.header("X-ECHO") == "p-1", "response headers are not readable case-insensitively")
        let received = server.requests.first { $0.path == "/echo" }
        try check(received?.body == body, "the server did not receive the body byte for byte")
        try check(received?.header("Content-Type") == "application/octet-stream", "a request header was lost")

        let get = try await transport.send(HTTPRequest(method: .get, url: try url("/plain"), timeout: .seconds(10)))
        try check(get.status == 200 && get.body == Data("ok".utf8), "a GET did not come back as 200 \"ok\"")

        let stamped = try await transport.sendAsConvertAgent(HTTPRequest(method: .get, url: try url("/agent"), timeout: .seconds(10)))
        try check(stamped.status == 200, "a stamped GET failed")
        try check(server.requests.last { $0.path == "/agent" }?.header("User-Agent") == ConvertAgent.userAgent,
                  "the ConvertAgent User-Agent did not reach the server")

        for (path, status) in [("/refuse", 404), ("/fail", 503)] {
            let answer = try await transport.send(HTTPRequest(method: .post, url: try url(path), body: Data("x".utf8), timeout: .seconds(10)))
            try check(answer.status == status, "\(path) should answer \(status) as a response, got \(answer.status)")
        }

        do {
            _ = try await transport.send(HTTPRequest(method: .post, url: try url("/drop"), body: Data("drop-me".utf8), timeout: .seconds(10)))
            throw ContractViolation("a dropped connection did not throw")
        } catch is TransportError {
        } catch let violation as ContractViolation {
            throw violation
        } catch {
            throw ContractViolation("a dropped connection threw \(error), not a TransportError")
        }
        let dropped = server.requests.filter { $0.path == "/drop" }.count
        try check(dropped == 1, "the dropped POST reached the server \(dropped) times; a transport never re-sends by itself")

        let lag = SchedulingLag()
        let start = ContinuousClock.now
        do {
            _ = try await transport.send(HTTPRequest(method: .get, url: try url("/slow"), timeout: .milliseconds(500)))
            throw ContractViolation("a request past its timeout succeeded")
        } catch let error as TransportError {
            try check(error == .timedOut, "a request past its timeout threw \(error), not timedOut")
        }
        let waited = ContinuousClock.now - start
        try check(waited >= .milliseconds(450), "a 500 ms timeout fired after \(waited)")
        // A process starved of threads (the whole suite under the thread sanitizer) wakes late.
        let worstLag = lag.stop()
        try check(waited < .seconds(8) + worstLag,
                  "the timeout was not honoured (\(waited) for 500 ms; the server answers at 10 s; tasks woke up to \(worstLag) late)")

        let task = Task { try await transport.send(HTTPRequest(method: .get, url: try url("/slow"), timeout: .seconds(10))) }
        try await Task.sleep(for: .milliseconds(100))
        task.cancel()
        switch await task.result {
        case .success: throw ContractViolation("a cancelled request succeeded")
        case .failure: break
        }
    }

    private static func check(_ condition: Bool, _ message: @autoclosure () -> String) throws {
        if !condition { throw ContractViolation(message()) }
    }
}
