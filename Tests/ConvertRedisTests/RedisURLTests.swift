import ConvertRedis
import ConvertStorage
import Foundation
import Testing

/// `RedisConfiguration(url:)`: what it reads, what it refuses, and that the password shows
/// nowhere; and the plaintext client's refusal of a `rediss://` configuration.
@Suite(.timeLimit(.minutes(1))) struct RedisURLTests {
    struct Expected: Sendable, CustomStringConvertible {
        var host: String
        var port = 6379
        var username: String?
        var password: String?
        var database = 0
        var tls = false

        var description: String { "\(host):\(port) user \(username ?? "nil") db \(database) tls \(tls)" }
    }

    static let valid: [(String, Expected)] = [
        ("redis://localhost", Expected(host: "localhost")),
        ("redis://localhost/", Expected(host: "localhost")),
        ("redis://localhost/0", Expected(host: "localhost")),
        ("redis://127.0.0.1:6380/3", Expected(host: "127.0.0.1", port: 6380, database: 3)),
        ("rediss://cache.example.com", Expected(host: "cache.example.com", tls: true)),
        ("rediss://app:pw@cache.example.com:6390/15",
         Expected(host: "cache.example.com", port: 6390, username: "app", password: "pw", database: 15, tls: true)),
        ("redis://[::1]:6380/2", Expected(host: "::1", port: 6380, database: 2)),
        ("redis://[::1]", Expected(host: "::1")),
        ("rediss://[2001:db8::1]/", Expected(host: "2001:db8::1", tls: true)),
        ("redis://[::ffff:192.0.2.1]:7000", Expected(host: "::ffff:192.0.2.1", port: 7000)),
        ("redis://:secret@host", Expected(host: "host", password: "secret")),
        ("redis://app@host", Expected(host: "host", username: "app")),
        ("redis://app:@host", Expected(host: "host", username: "app")),
        ("redis://@host", Expected(host: "host")),
        ("redis://user%40corp:p%40ss%3Aword@host", Expected(host: "host", username: "user@corp", password: "p@ss:word")),
        ("redis://u:pa:ss@host", Expected(host: "host", username: "u", password: "pa:ss")),
        ("redis://u:%E2%82%ac%2F%3f%23@host", Expected(host: "host", username: "u", password: "€/?#")),
        ("redis://u:!$&'()*+,;=~-._@host", Expected(host: "host", username: "u", password: "!$&'()*+,;=~-._")),
        ("REDIS://Host:1/0", Expected(host: "Host", port: 1)),
        ("RedisS://host:65535", Expected(host: "host", port: 65535, tls: true)),
        ("redis://my_redis-1.internal:06379/007", Expected(host: "my_redis-1.internal", database: 7)),
        ("redis://h/9223372036854775807", Expected(host: "h", database: Int.max)),
    ]

    @Test(arguments: valid)
    func aValidURLGivesItsFields(url: String, expected: Expected) throws {
        let configuration = try RedisConfiguration(url: url)
        #expect(configuration.host == expected.host)
        #expect(configuration.port == expected.port)
        #expect(configuration.username == expected.username)
        #expect(configuration.password == expected.password)
        #expect(configuration.database == expected.database)
        #expect(configuration.tls == expected.tls)
        // The rest keeps its defaults.
        let defaults = RedisConfiguration()
        #expect(configuration.keyPrefix == defaults.keyPrefix && configuration.ttl == nil)
        #expect(configuration.commandTimeout == defaults.commandTimeout && configuration.poolSize == defaults.poolSize)
        #expect(configuration.connectTimeout == defaults.connectTimeout)
        // Without a password the description is a URL that reads back to the same configuration.
        if expected.password == nil {
            #expect(try RedisConfiguration(url: configuration.description) == configuration, "\(configuration)")
        }
    }

    typealias URLError = RedisConfiguration.URLError

    static let invalid: [(String, URLError)] = [
        ("", .unsupportedScheme),
        ("http://host", .unsupportedScheme),
        ("redis:/host", .unsupportedScheme),
        ("redis:host", .unsupportedScheme),
        ("localhost:6379", .unsupportedScheme),
        (" redis://host", .unsupportedScheme),
        ("redisss://host", .unsupportedScheme),
        ("redis://", .missingHost),
        ("redis:///0", .missingHost),
        ("redis://:6379", .missingHost),
        ("redis://user:pw@", .missingHost),
        ("redis://::1", .missingHost),
        ("redis://[]:6379", .missingHost),
        ("redis://[::1", .invalidHost),
        ("redis://[::g]", .invalidHost),
        ("redis://[1.2.3.4]", .invalidHost),
        ("redis://[::1]x", .invalidHost),
        ("redis://[fe80::1%25eth0]", .invalidHost),
        ("redis://ho st", .invalidHost),
        ("redis://host%20name", .invalidHost),
        ("redis://-host", .invalidHost),
        ("redis://hôst", .invalidHost),
        ("redis://host\n", .invalidHost),
        ("redis://host:", .invalidPort),
        ("redis://host:0", .invalidPort),
        ("redis://host:65536", .invalidPort),
        ("redis://host:-1", .invalidPort),
        ("redis://host:+80", .invalidPort),
        ("redis://host:99999999999999999999999", .invalidPort),
        ("redis://host:6379:1", .invalidPort),
        ("redis://[::1]:abc", .invalidPort),
        ("redis://[::1]:", .invalidPort),
        ("redis://host/-1", .invalidDatabase),
        ("redis://host/x", .invalidDatabase),
        ("redis://host/1.5", .invalidDatabase),
        ("redis://host/+1", .invalidDatabase),
        ("redis://host/%31", .invalidDatabase),
        ("redis://host/9223372036854775808", .invalidDatabase),
        ("redis://host/0/", .unexpectedComponent(.path)),
        ("redis://host/0/extra", .unexpectedComponent(.path)),
        ("redis://host//", .unexpectedComponent(.path)),
        ("redis://host?timeout=1", .unexpectedComponent(.query)),
        ("redis://host/0?", .unexpectedComponent(.query)),
        ("redis://host#frag", .unexpectedComponent(.fragment)),
        ("redis://host/0#", .unexpectedComponent(.fragment)),
        ("redis://host/0#a?b", .unexpectedComponent(.fragment)),
        ("redis://u:p%4@host", .invalidPercentEncoding),
        ("redis://u:p%zz@host", .invalidPercentEncoding),
        ("redis://u%:p@host", .invalidPercentEncoding),
        ("redis://u:%FF@host", .invalidPercentEncoding),
        ("redis://u:%C3@host", .invalidPercentEncoding),
        ("redis://u:p@ss@host", .invalidUserInfo),
        ("redis://u:p ss@host", .invalidUserInfo),
        ("redis://u:pä@host", .invalidUserInfo),
        ("redis://u:p/ss@host", .invalidUserInfo),
        ("redis://u:p?ss@host", .invalidUserInfo),
        ("redis://u:p#ss@host", .invalidUserInfo),
        ("redis://u:p[ss]@host", .invalidUserInfo),
    ]

    @Test(arguments: invalid)
    func anInvalidURLIsRefusedWithItsCause(url: String, expected: URLError) {
        #expect(throws: expected, "\(url.debugDescription)") { try RedisConfiguration(url: url) }
    }

    @Test func aURLIsBoundedTo4KiB() throws {
        let prefix = "redis://"
        let atLimit = prefix + String(repeating: "a", count: 4096 - prefix.utf8.count)
        #expect(try RedisConfiguration(url: atLimit).host.utf8.count == 4096 - prefix.utf8.count)
        #expect(throws: URLError.tooLong(maximum: 4096)) { try RedisConfiguration(url: atLimit + "a") }
        #expect(throws: URLError.tooLong(maximum: 4096)) {
            try RedisConfiguration(url: "redis://h/" + String(repeating: "0", count: 1 << 20))
        }
    }

    /// Every place a password can land by mistake: no error says it, however it is described.
    @Test func noURLErrorContainsThePassword() {
        let secret = "hunter2-SECRET"
        let urls = [
            "redis://u:\(secret)@@host", "redis://u:\(secret)/x@host", "redis://u:\(secret)?x@host", "redis://u:\(secret)#x@host",
            "redis://u:\(secret)%zz@host", "redis://u:\(secret)%FF@host", "redis://u:\(secret) x@host", "redis://u:\(secret)@ho st",
            "redis://u:\(secret)@host:0", "redis://u:\(secret)@host/x", "redis://u:\(secret)@host?x", "redis://u:\(secret)@",
            "redis://host:\(secret)", "redis://host/\(secret)", "redis://host?\(secret)", "redis://host#\(secret)",
            "redis://\(secret)@[::1", "redis://[\(secret)]", "redis://:\(secret)", "\(secret)", "u:\(secret)@host:6379",
            "\(secret)://host", "redis://u:\(secret)@host" + String(repeating: "0", count: 5000),
        ]
        for url in urls {
            do {
                let configuration = try RedisConfiguration(url: url)
                Issue.record("\(url) was accepted: \(configuration)")
            } catch {
                var dumped = ""
                dump(error, to: &dumped)
                for text in [error.description, "\(error)", String(reflecting: error), dumped, error.localizedDescription] {
                    #expect(!text.contains("hunter2"), "\(url): \(text)")
                }
            }
        }
    }

    @Test func theDescriptionShowsTLSAndNeverThePassword() throws {
        let configuration = try RedisConfiguration(url: "rediss://app%3Aone:p%40ss-SECRET@[::1]:6380/2")
        #expect(configuration.password == "p@ss-SECRET")
        #expect(configuration.description == "rediss://app%3Aone:***@[::1]:6380/2")
        var dumped = ""
        dump(configuration, to: &dumped)
        #expect(dumped.contains("tls: true"), "\(dumped)")
        for text in [configuration.description, dumped, String(reflecting: configuration), "\(configuration)"] {
            #expect(!text.contains("SECRET"), "\(text)")
        }
        #expect(try RedisConfiguration(url: "redis://:x@h").description == "redis://:***@h:6379/0")
        // TLS is part of the configuration's identity.
        var plain = configuration
        plain.tls = false
        #expect(plain != configuration)
        #expect(plain.description == "redis://app%3Aone:***@[::1]:6380/2")
    }

    /// A `rediss://` configuration given to the plaintext client: every call fails at once with
    /// the TLS refusal, and no connection reaches the listener (a plaintext client pointed there
    /// does connect, so the listener would have seen one).
    @Test func aTLSConfigurationNeverOpensAConnection() async throws {
        let server = try GarbageServer(reply: Array("HTTP/1.1 400 Bad Request\r\n\r\n".utf8))
        var configuration = try RedisConfiguration(url: "rediss://app:tls-SECRET@127.0.0.1:\(server.port)/1")
        // Long bounds: a call that tried to connect would take far longer than a refusal.
        configuration.connectTimeout = .seconds(5)
        configuration.commandTimeout = .seconds(5)
        let client = RedisClient(configuration: configuration)
        defer { client.close() }
        #expect(!client.isAvailable)

        func expectRefusal(_ error: RedisError?, _ call: String) {
            guard case .tlsUnavailable(let reason)? = error else {
                Issue.record("\(call): expected the TLS refusal, got \(String(describing: error))")
                return
            }
            #expect(reason.contains("TLS connector") && reason.contains("plaintext only"), "\(reason)")
            #expect(!reason.contains("SECRET") && !(error?.description.contains("SECRET") ?? true))
        }

        let started = ContinuousClock.now
        expectRefusal(await redisError { try await client.ping() }, "async ping")
        expectRefusal(await redisError { try client.ping() }, "blocking ping")
        expectRefusal(await redisError { _ = try await client.pipeline([.ping, .ping]) }, "pipeline")
        expectRefusal(await redisError { _ = try client.hgetall("k") }, "blocking hgetall")
        expectRefusal(await redisError { _ = try await client.hset("k", ["f": "v"]) }, "hset")
        let backend = RedisVisitorBackend(client: client)
        do {
            _ = try await backend.load(VisitorKey(namespace: "1-2", visitorId: "v"))
            Issue.record("the backend loaded through a refused client")
        } catch {
            expectRefusal(error as? RedisError, "backend load")
        }
        let elapsed = ContinuousClock.now - started
        #expect(underThreadSanitizer || elapsed < .seconds(1), "refusals took \(elapsed)")
        expectRefusal(await redisError { _ = try RedisConnection(configuration: configuration) }, "a connection")

        // Time for a connection the client might have opened in the background to arrive.
        try await Task.sleep(for: .milliseconds(200))
        #expect(server.accepted == 0, "a TLS configuration must never connect in plaintext")

        // The listener does count connections: the same address without TLS connects.
        configuration.tls = false
        let plain = RedisClient(configuration: configuration)
        defer { plain.close() }
        _ = await redisError { try await plain.ping() }
        #expect(await eventually { server.accepted >= 1 })
    }
}
