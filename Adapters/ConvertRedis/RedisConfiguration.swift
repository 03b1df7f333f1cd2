/// Where a ``RedisClient`` connects and how it behaves.
///
/// ```swift
/// var configuration = RedisConfiguration(host: "10.0.0.5", port: 6379, password: secret)
/// configuration.keyPrefix = "convert:"
///
/// var fromURL = try RedisConfiguration(url: "redis://app:s3cret@10.0.0.5:6379/2")
/// fromURL.keyPrefix = "convert:"
/// ```
///
/// Its description and mirror show `***` in place of the password.
public struct RedisConfiguration: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    /// A host name, an IPv4 address, or an IPv6 address (bare or in brackets).
    public var host: String
    /// The TCP port (6379 by default).
    public var port: Int
    /// The ACL user; `nil` authenticates with the password alone (the `default` user).
    public var username: String?
    /// Sent with `AUTH` on connect when set.
    public var password: String?
    /// Selected with `SELECT` on connect when not 0.
    public var database: Int
    /// Put in front of every key the client sends.
    public var keyPrefix: String
    /// How long what a store writes should live; `nil` keeps keys until deleted. The client sends
    /// no expiry of its own: ``RedisVisitorBackend`` renews it (`PEXPIRE`) on every write.
    public var ttl: Duration?
    /// The longest wait for a TCP connection. Connections are opened by the client's connector
    /// thread, never by a call: a call waits for one only within its `commandTimeout`.
    public var connectTimeout: Duration
    /// The longest any call takes, all of it: waiting for a pooled connection, writing its
    /// commands and reading every reply (250 ms by default). Past it the call fails with
    /// ``RedisError/timeout(reason:)``; a reply that does not come in time also makes the
    /// server unavailable until a background probe reaches it again.
    public var commandTimeout: Duration
    /// The most connections the client holds open at once. Size it to the calls that may run at
    /// the same moment: the threads deciding requests (a claim or a load each), plus one for the
    /// shared store's writes behind. Calls beyond it wait for a connection, within their
    /// `commandTimeout`.
    public var poolSize: Int
    /// The wait after the server became unavailable before the client's first background probe;
    /// doubled per failed probe.
    public var reconnectBackoffInitial: Duration
    /// The longest wait between probes.
    public var reconnectBackoffMax: Duration
    /// Whether the connection must be encrypted; set by a `rediss://` URL. A ``RedisClient``
    /// whose transport does not encrypt (the default, ``RedisPlainTransport``) refuses such a
    /// configuration: every call fails with ``RedisError/tlsUnavailable(reason:)`` and no
    /// connection is ever opened; it never falls back to plaintext. Give it a TLS transport
    /// (`RedisTLSTransport`, package `ConvertRedisTLS`).
    public var tls: Bool

    /// A configuration; by default a local server on 6379, no password, database 0, no prefix, a
    /// 1 s connect timeout, 250 ms per call, 4 connections, reconnect probes from 100 ms doubling
    /// to 5 s, no TLS.
    public init(host: String = "127.0.0.1", port: Int = 6379, username: String? = nil, password: String? = nil,
                database: Int = 0, keyPrefix: String = "", ttl: Duration? = nil,
                connectTimeout: Duration = .seconds(1), commandTimeout: Duration = .milliseconds(250), poolSize: Int = 4,
                reconnectBackoffInitial: Duration = .milliseconds(100), reconnectBackoffMax: Duration = .seconds(5), tls: Bool = false) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.keyPrefix = keyPrefix
        self.ttl = ttl
        self.connectTimeout = connectTimeout
        self.commandTimeout = commandTimeout
        self.poolSize = poolSize
        self.reconnectBackoffInitial = reconnectBackoffInitial
        self.reconnectBackoffMax = reconnectBackoffMax
        self.tls = tls
    }

    /// `redis://user:***@host:port/db` (`rediss://` with ``tls``), the password never shown;
    /// the user is percent-encoded as in a URL.
    public var description: String {
        let bracketed = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        let credentials: String
        switch (username, password) {
        case (let user?, _?): credentials = "\(Self.percentEncoded(user)):***@"
        case (nil, _?): credentials = ":***@"
        case (let user?, nil): credentials = "\(Self.percentEncoded(user))@"
        case (nil, nil): credentials = ""
        }
        return "\(tls ? "rediss" : "redis")://\(credentials)\(bracketed):\(port)/\(database)"
    }

    /// Every field, with the password as `***`, so `dump` and debuggers do not show it.
    public var customMirror: Mirror {
        Mirror(self, children: [
            "host": host, "port": port, "username": username as Any, "password": password == nil ? "nil" : "***",
            "database": database, "keyPrefix": keyPrefix, "ttl": ttl as Any, "connectTimeout": connectTimeout,
            "commandTimeout": commandTimeout, "poolSize": poolSize,
            "reconnectBackoffInitial": reconnectBackoffInitial, "reconnectBackoffMax": reconnectBackoffMax, "tls": tls,
        ], displayStyle: .struct)
    }
}
