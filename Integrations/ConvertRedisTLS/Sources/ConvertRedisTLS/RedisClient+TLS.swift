import ConvertEnvironment
import ConvertRedis

extension RedisClient {
    /// A client for the server at `url` (`rediss://[user[:password]@]host[:port][/db]`; a
    /// `redis://` URL is encrypted too) over TLS as `tls` says, the other settings at their
    /// defaults. Throws ``ConvertRedis/RedisConfiguration/URLError`` for a malformed URL and
    /// ``ConvertRedis/RedisError/tlsFailed(reason:)`` when a certificate or key cannot be read;
    /// neither's description contains the password.
    ///
    /// ```swift
    /// let redis = try RedisClient(url: "rediss://app:secret@redis.internal:6380",
    ///                             tls: RedisTLSConfiguration(caFile: "/etc/redis/tls/ca.crt"))
    /// ```
    public convenience init(url: String, tls: RedisTLSConfiguration = RedisTLSConfiguration(),
                            clock: any SleepClock = .continuous) throws {
        var configuration = try RedisConfiguration(url: url)
        configuration.tls = true
        self.init(configuration: configuration, transport: try RedisTLSTransport(tls), clock: clock)
    }
}
