#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension RedisConfiguration {
    /// Why ``init(url:)`` refused a connection URL. Descriptions name the part at fault and never
    /// repeat any of the URL's text, so none can carry the password.
    public enum URLError: Error, Sendable, Hashable, CustomStringConvertible {
        /// A part of a URL that a Redis URL does not take.
        public enum Component: String, Sendable, Hashable {
            /// A path beyond the database number (`/2/x`).
            case path
            /// A query (`?…`).
            case query
            /// A fragment (`#…`).
            case fragment
        }

        /// The URL is longer than `maximum` bytes (UTF-8).
        case tooLong(maximum: Int)
        /// The URL does not start with `redis://` or `rediss://`.
        case unsupportedScheme
        /// No host between `//` (or `@`) and the port or path.
        case missingHost
        /// The host is not a host name, an IPv4 address or a bracketed IPv6 address.
        case invalidHost
        /// The port is not a decimal number in 1...65535.
        case invalidPort
        /// The path is not `/` followed by a non-negative decimal database number.
        case invalidDatabase
        /// The user or password holds a character that must be percent-encoded (an `@`, `/`, `?`
        /// or `#`, a space, a character outside ASCII).
        case invalidUserInfo
        /// A `%` in the user or password is not followed by two hex digits, or the decoded bytes
        /// are not UTF-8.
        case invalidPercentEncoding
        /// The URL has a query, a fragment, or a path beyond the database number.
        case unexpectedComponent(Component)

        /// What is wrong and the form expected; no text of the URL.
        public var description: String {
            let form = "redis://[user[:password]@]host[:port][/db]"
            return switch self {
            case .tooLong(let maximum): "Redis URL is longer than \(maximum) bytes"
            case .unsupportedScheme: "Redis URL must start with redis:// or rediss:// (\(form))"
            case .missingHost: "Redis URL has no host (\(form); an IPv6 address goes in brackets)"
            case .invalidHost: "Redis URL's host is not a host name, an IPv4 address or a bracketed IPv6 address"
            case .invalidPort: "Redis URL's port is not a decimal number in 1...65535"
            case .invalidDatabase: "Redis URL's database (its path) is not a non-negative decimal number"
            case .invalidUserInfo:
                "Redis URL's user or password holds a character that must be percent-encoded "
                    + "(@ as %40, / as %2F, ? as %3F, # as %23, : in a user as %3A)"
            case .invalidPercentEncoding:
                "Redis URL's user or password has a % not followed by two hex digits, or does not decode to UTF-8"
            case .unexpectedComponent(.path): "Redis URL has a path beyond the database number (\(form))"
            case .unexpectedComponent(let component): "Redis URL has a \(component.rawValue) (\(form) takes none)"
            }
        }
    }

    /// The longest URL ``init(url:)`` reads, in UTF-8 bytes.
    static let maximumURLLength = 4096

    /// A configuration from a connection URL, `redis://[user[:password]@]host[:port][/db]`, or
    /// `rediss://…` for ``tls``; the other settings keep their defaults and can be set after.
    ///
    /// ```swift
    /// var configuration = try RedisConfiguration(url: environment["REDIS_URL"] ?? "redis://127.0.0.1")
    /// configuration.keyPrefix = "convert:"
    /// ```
    ///
    /// The host is a name, an IPv4 address or an IPv6 address in brackets (`redis://[::1]:6380/2`);
    /// the port is 6379 unless given (for both schemes); the database is 0 unless a path `/n`
    /// gives it. The user and password are percent-decoded (`%40` is `@`, `%3A` is `:`);
    /// `redis://:secret@host` gives a password without a user, and `redis://name@host` a user
    /// without a password (which sends no `AUTH`). A query, a fragment, a path beyond the database
    /// number, an empty port and URLs over 4 KiB are refused. The parse is strict and its own,
    /// the same on every platform.
    ///
    /// - Throws: ``URLError``, whose description never contains the password.
    public init(url: String) throws(URLError) {
        let parsed = try RedisURLParser.parse(url)
        self.init(host: parsed.host, port: parsed.port, username: parsed.username, password: parsed.password,
                  database: parsed.database, tls: parsed.tls)
    }

    /// `text` with every character but the unreserved and sub-delimiters percent-encoded, as a
    /// URL's user part.
    static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            if RedisURLParser.isUnreserved(byte) || RedisURLParser.isSubDelimiter(byte) {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0xF, radix: 16, uppercase: true)
            }
        }
        return out
    }
}

/// The strict parser behind ``RedisConfiguration/init(url:)``, over the URL's UTF-8 bytes.
enum RedisURLParser {
    typealias URLError = RedisConfiguration.URLError

    struct Parsed {
        var tls: Bool
        var username: String?
        var password: String?
        var host: String
        var port: Int
        var database: Int
    }

    static func parse(_ url: String) throws(URLError) -> Parsed {
        guard url.utf8.count <= RedisConfiguration.maximumURLLength else {
            throw .tooLong(maximum: RedisConfiguration.maximumURLLength)
        }
        let bytes = Array(url.utf8)
        let tls: Bool
        let start: Int
        if hasPrefix(bytes, "rediss://") {
            (tls, start) = (true, 9)
        } else if hasPrefix(bytes, "redis://") {
            (tls, start) = (false, 8)
        } else {
            throw .unsupportedScheme
        }

        // The authority ends at the first '/', '?' or '#'; what follows is the path, query, fragment.
        let end = bytes[start...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
            ?? bytes.endIndex
        let authority = bytes[start..<end]
        let rest = bytes[end...]
        // An '@' after the authority, none in it: a '/', '?' or '#' in the credentials cut them.
        if !authority.contains(UInt8(ascii: "@")), rest.contains(UInt8(ascii: "@")) { throw .invalidUserInfo }
        let database = try parseDatabase(rest)

        var hostPort = authority
        var username: String?
        var password: String?
        if let at = authority.firstIndex(of: UInt8(ascii: "@")) {
            let userInfo = authority[..<at]
            hostPort = authority[(at + 1)...]
            guard !hostPort.contains(UInt8(ascii: "@")),
                  userInfo.allSatisfy({ isUnreserved($0) || isSubDelimiter($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: "%") })
            else { throw .invalidUserInfo }
            // The password runs from the first ':' on (a ':' in the user must be %3A).
            if let colon = userInfo.firstIndex(of: UInt8(ascii: ":")) {
                username = try decoded(userInfo[..<colon])
                password = try decoded(userInfo[(colon + 1)...])
            } else {
                username = try decoded(userInfo)
            }
        }
        let (host, port) = try parseHostPort(hostPort)
        return Parsed(tls: tls, username: username, password: password, host: host, port: port, database: database)
    }

    /// Nothing, `/`, or `/n`; a query or fragment is refused first.
    private static func parseDatabase(_ rest: ArraySlice<UInt8>) throws(URLError) -> Int {
        if let mark = rest.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) {
            throw .unexpectedComponent(rest[mark] == UInt8(ascii: "?") ? .query : .fragment)
        }
        guard rest.first == UInt8(ascii: "/") else { return 0 }
        let path = rest.dropFirst()
        guard !path.contains(UInt8(ascii: "/")) else { throw .unexpectedComponent(.path) }
        guard !path.isEmpty else { return 0 }
        guard let database = decimal(path, maximum: Int.max) else { throw .invalidDatabase }
        return database
    }

    private static func parseHostPort(_ hostPort: ArraySlice<UInt8>) throws(URLError) -> (String, Int) {
        let host: String
        let portText: ArraySlice<UInt8>?
        if hostPort.first == UInt8(ascii: "[") {
            guard let close = hostPort.firstIndex(of: UInt8(ascii: "]")) else { throw .invalidHost }
            let literal = hostPort[(hostPort.startIndex + 1)..<close]
            guard isIPv6(literal) else { throw literal.isEmpty ? .missingHost : .invalidHost }
            host = String(decoding: literal, as: UTF8.self)
            let after = hostPort[(close + 1)...]
            if after.isEmpty {
                portText = nil
            } else if after.first == UInt8(ascii: ":") {
                portText = after.dropFirst()
            } else {
                throw .invalidHost
            }
        } else {
            let colon = hostPort.firstIndex(of: UInt8(ascii: ":"))
            let name = hostPort[..<(colon ?? hostPort.endIndex)]
            guard !name.isEmpty else { throw .missingHost }
            guard name.allSatisfy(isHostNameByte), name.first != UInt8(ascii: "."), name.first != UInt8(ascii: "-")
            else { throw .invalidHost }
            host = String(decoding: name, as: UTF8.self)
            portText = colon.map { hostPort[($0 + 1)...] }
        }
        guard let portText else { return (host, 6379) }
        guard let port = decimal(portText, maximum: 65535), port >= 1 else { throw .invalidPort }
        return (host, port)
    }

    /// ASCII digits only (no sign, no space), at most `maximum`; `nil` otherwise.
    private static func decimal(_ digits: ArraySlice<UInt8>, maximum: Int) -> Int? {
        guard !digits.isEmpty else { return nil }
        var value = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times, overflowTimes) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflowSum) = times.addingReportingOverflow(Int(byte - UInt8(ascii: "0")))
            guard !overflowTimes, !overflowSum, sum <= maximum else { return nil }
            value = sum
        }
        return value
    }

    /// Percent-decoded UTF-8; `nil` for an empty part.
    private static func decoded(_ part: ArraySlice<UInt8>) throws(URLError) -> String? {
        guard !part.isEmpty else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(part.count)
        var index = part.startIndex
        while index < part.endIndex {
            let byte = part[index]
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                index += 1
                continue
            }
            guard index + 2 < part.endIndex, let high = hexValue(part[index + 1]), let low = hexValue(part[index + 2]) else {
                throw .invalidPercentEncoding
            }
            bytes.append(high << 4 | low)
            index += 3
        }
        let text = String(decoding: bytes, as: UTF8.self)
        // Bytes that are not UTF-8 decode to U+FFFD, which does not encode back to them.
        guard text.utf8.elementsEqual(bytes) else { throw .invalidPercentEncoding }
        return text
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// An IPv6 address as `inet_pton` reads it (no zone).
    private static func isIPv6(_ literal: ArraySlice<UInt8>) -> Bool {
        guard !literal.isEmpty, literal.count <= 45,
              literal.allSatisfy({ hexValue($0) != nil || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") })
        else { return false }
        var address = in6_addr()
        return String(decoding: literal, as: UTF8.self).withCString { inet_pton(AF_INET6, $0, &address) } == 1
    }

    /// Letters, digits, `-`, `.` and `_`: a host name or an IPv4 address.
    private static func isHostNameByte(_ byte: UInt8) -> Bool {
        isAlphanumeric(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    /// RFC 3986's unreserved characters: letters, digits, `-`, `.`, `_`, `~`.
    static func isUnreserved(_ byte: UInt8) -> Bool {
        isAlphanumeric(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
            || byte == UInt8(ascii: "~")
    }

    /// RFC 3986's sub-delimiters, allowed unencoded in a user and password: `!$&'()*+,;=`.
    static func isSubDelimiter(_ byte: UInt8) -> Bool {
        "!$&'()*+,;=".utf8.contains(byte)
    }

    /// Whether `bytes` starts with the ASCII `prefix`, ignoring case.
    private static func hasPrefix(_ bytes: [UInt8], _ prefix: String) -> Bool {
        let expected = Array(prefix.utf8)
        guard bytes.count >= expected.count else { return false }
        return zip(bytes, expected).allSatisfy { byte, wanted in
            let lower = (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
            return lower == wanted
        }
    }
}
