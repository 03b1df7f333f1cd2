/// Where a ``RedisClient`` connects and how it behaves.
///
/// ```swift
/// var configuration = RedisConfiguration(host: "10.0.0.5", port: 6379, password: secret)
/// configuration.keyPrefix = "convert:"
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
    /// The longest wait for a TCP connection.
    public var connectTimeout: Duration
    /// The longest wait for one call: writing its commands and reading every reply, or waiting
    /// for a free pooled connection.
    public var commandTimeout: Duration
    /// The most connections the client holds open at once.
    public var poolSize: Int
    /// The wait after a failed connect before the next attempt; doubled per further failure.
    public var reconnectBackoffInitial: Duration
    /// The longest wait between connect attempts.
    public var reconnectBackoffMax: Duration

    /// A configuration; by default a local server on 6379, no password, database 0, no prefix, 2 s
    /// timeouts, 4 connections.
    public init(host: String = "127.0.0.1", port: Int = 6379, username: String? = nil, password: String? = nil,
                database: Int = 0, keyPrefix: String = "", ttl: Duration? = nil,
                connectTimeout: Duration = .seconds(2), commandTimeout: Duration = .seconds(2), poolSize: Int = 4,
                reconnectBackoffInitial: Duration = .milliseconds(100), reconnectBackoffMax: Duration = .seconds(5)) {
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
    }

    /// `redis://user:***@host:port/db`, the password never shown.
    public var description: String {
        let bracketed = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        let credentials: String
        switch (username, password) {
        case (let user?, _?): credentials = "\(user):***@"
        case (nil, _?): credentials = ":***@"
        case (let user?, nil): credentials = "\(user)@"
        case (nil, nil): credentials = ""
        }
        return "redis://\(credentials)\(bracketed):\(port)/\(database)"
    }

    /// Every field, with the password as `***`, so `dump` and debuggers do not show it.
    public var customMirror: Mirror {
        Mirror(self, children: [
            "host": host, "port": port, "username": username as Any, "password": password == nil ? "nil" : "***",
            "database": database, "keyPrefix": keyPrefix, "ttl": ttl as Any, "connectTimeout": connectTimeout,
            "commandTimeout": commandTimeout, "poolSize": poolSize,
            "reconnectBackoffInitial": reconnectBackoffInitial, "reconnectBackoffMax": reconnectBackoffMax,
        ], displayStyle: .struct)
    }
}
