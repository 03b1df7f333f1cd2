import ConvertEnvironment
import ConvertVisitor
import Foundation

/// Keeps a visitor's id in a cookie, for servers: read it from a request's `Cookie` header,
/// and make the `Set-Cookie` value that gives a new visitor one. Framework-agnostic: it works on
/// header strings, so any server (Vapor, Hummingbird, a plain socket) can use it.
///
/// ```swift
/// let cookie = VisitorCookie()
/// let known = cookie.visitorId(fromCookieHeader: request.headers["Cookie"])
/// let visitorId = known ?? VisitorCookie.newVisitorId()
/// let context = sdk.createContext(visitorId: visitorId)
/// if known == nil { response.headers["Set-Cookie"] = try cookie.makeSetCookieHeader(for: visitorId) }
/// ```
public struct VisitorCookie: Sendable, Hashable {
    /// The longest visitor id a cookie carries, in UTF-8 bytes: the longest a context accepts
    /// (`ConvertContext.maximumVisitorIdBytes`).
    public static let maximumVisitorIdBytes = VisitorIdBound.maximumBytes

    /// Which cross-site requests carry the cookie.
    public enum SameSite: String, Sendable, Hashable {
        /// `Strict`: same-site requests only; `Lax` (the default): also top-level navigations from
        /// other sites; `None`: every request (needs `Secure`).
        case strict = "Strict", lax = "Lax", none = "None"
    }

    /// The cookie's name.
    public var name: String
    /// How long the browser keeps it.
    public var maxAge: Duration
    /// The path the cookie is sent for (`/`: the whole site).
    public var path: String
    /// `nil` for the request's own host only.
    public var domain: String?
    /// Sent over HTTPS only. Required by browsers when ``sameSite`` is `.none`.
    public var secure: Bool
    /// Hidden from page scripts.
    public var httpOnly: Bool
    /// Which cross-site requests carry the cookie.
    public var sameSite: SameSite

    /// The default cookie name.
    public static let defaultName = "convert_visitor_id"

    /// A cookie with secure defaults: HTTPS only, hidden from scripts, `SameSite=Lax`, kept
    /// 180 days, for the whole site.
    public init(name: String = VisitorCookie.defaultName, maxAge: Duration = .seconds(180 * 24 * 3600), path: String = "/",
                domain: String? = nil, secure: Bool = true, httpOnly: Bool = true, sameSite: SameSite = .lax) {
        self.name = name
        self.maxAge = maxAge
        self.path = path
        self.domain = domain
        self.secure = secure
        self.httpOnly = httpOnly
        self.sameSite = sameSite
    }

    /// Why a `Set-Cookie` header could not be made.
    public struct InvalidCookie: Error, Hashable, CustomStringConvertible, LocalizedError {
        /// What is wrong with the id or the cookie's settings.
        public let description: String
        /// The same text, for `localizedDescription`.
        public var errorDescription: String? { description }
    }

    /// The visitor id in a `Cookie` header value (`"a=1; convert_visitor_id=abc"`), or `nil`
    /// when the header lacks the cookie or its value is not a usable visitor id (empty, longer
    /// than ``maximumVisitorIdBytes``, or holding a control character once
    /// decoded). Quoted values are unquoted and percent-escapes decoded; the first cookie of the
    /// name wins; malformed pairs are skipped.
    public func visitorId(fromCookieHeader header: String?) -> String? {
        guard var header else { return nil }
        // Read as bytes, in place: this runs on every request, and Foundation's trimming costs
        // microseconds.
        return header.withUTF8 { bytes in
            var start = 0
            while start < bytes.count {
                var end = start
                while end < bytes.count && bytes[end] != UInt8(ascii: ";") { end += 1 }
                defer { start = end + 1 }
                guard let equals = bytes[start..<end].firstIndex(of: UInt8(ascii: "=")) else { continue }
                guard Self.trimmed(bytes[start..<equals]).elementsEqual(name.utf8) else { continue }
                var value = Self.trimmed(bytes[(equals + 1)..<end])
                if value.count >= 2, value.first == UInt8(ascii: "\""), value.last == UInt8(ascii: "\"") {
                    value = value.dropFirst().dropLast()
                }
                let text = String(decoding: value, as: UTF8.self)
                let decoded = value.contains(UInt8(ascii: "%")) ? text.removingPercentEncoding ?? text : text
                let usable = !decoded.isEmpty && decoded.utf8.count <= Self.maximumVisitorIdBytes
                    && !decoded.allSatisfy(\.isWhitespace) && !Self.hasControlCharacter(decoded)
                return usable ? decoded : nil
            }
            return nil
        }
    }

    /// Without the spaces and tabs around it (a cookie header's optional white space).
    private static func trimmed(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> Slice<UnsafeBufferPointer<UInt8>> {
        var bytes = bytes
        while let first = bytes.first, first == 0x20 || first == 0x09 { bytes.removeFirst() }
        while let last = bytes.last, last == 0x20 || last == 0x09 { bytes.removeLast() }
        return bytes
    }

    /// The `Set-Cookie` header value that stores `visitorId` (percent-escaped where a cookie
    /// value cannot hold a character). Throws ``InvalidCookie`` for an id no context would
    /// accept (empty, longer than ``maximumVisitorIdBytes``, with a control
    /// character) and for a ``name``, ``path`` or ``domain`` that would break the header.
    public func makeSetCookieHeader(for visitorId: String) throws -> String {
        if visitorId.isEmpty || visitorId.utf8.count > Self.maximumVisitorIdBytes {
            throw InvalidCookie(description: "a visitor id must be 1 to \(Self.maximumVisitorIdBytes) bytes")
        }
        if Self.hasControlCharacter(visitorId) { throw InvalidCookie(description: "the visitor id holds a control character") }
        // RFC 6265's token for the name: visible ASCII but separators.
        let separators = Set("()<>@,;:\\\"/[]?={}".utf8)
        if name.isEmpty || !name.utf8.allSatisfy({ (0x21...0x7E).contains($0) && !separators.contains($0) }) {
            throw InvalidCookie(description: "the cookie name \"\(name)\" is not a token")
        }
        if path.isEmpty || Self.hasControlCharacter(path) || path.contains(";") {
            throw InvalidCookie(description: "the cookie path must be non-empty, without \";\" or control characters")
        }
        if let domain, domain.isEmpty || !domain.utf8.allSatisfy({ byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
        }) {
            throw InvalidCookie(description: "the cookie domain \"\(domain)\" is not a host name")
        }
        return header(for: visitorId)
    }

    private func header(for visitorId: String) -> String {
        var header = "\(name)=\(Self.escape(visitorId)); Path=\(path); Max-Age=\(maxAge.components.seconds)"
        if let domain { header += "; Domain=\(domain)" }
        if secure || sameSite == .none { header += "; Secure" }
        if httpOnly { header += "; HttpOnly" }
        header += "; SameSite=\(sameSite.rawValue)"
        return header
    }

    private static func hasControlCharacter(_ text: String) -> Bool {
        text.utf8.contains { $0 < 0x20 || $0 == 0x7F }
    }

    /// A new random visitor id (a lowercase UUID, as the SDK's own auto ids).
    public static func newVisitorId() -> String { RandomUUID.string() }

    /// Throws ``InvalidCookie`` when the name, path or domain would break a `Set-Cookie` header:
    /// a server checks its settings once, at start, so no request finds them wrong.
    public func validate() throws {
        _ = try makeSetCookieHeader(for: "visitor")
    }

    /// The visitor a request's `Cookie` header names, or a new one: its id, and the `Set-Cookie`
    /// value to send when it is new (`nil` for a known visitor). The settings are expected to have
    /// passed ``validate()``; a new id is valid by construction.
    public func visitor(fromCookieHeader header: String?) -> (id: String, setCookie: String?) {
        if let known = visitorId(fromCookieHeader: header) { return (known, nil) }
        let id = Self.newVisitorId()
        return (id, self.header(for: id))
    }

    /// RFC 6265 cookie-octets pass; everything else (and `%`) is percent-escaped.
    private static func escape(_ value: String) -> String {
        func allowed(_ byte: UInt8) -> Bool {
            (byte == 0x21 || (0x23...0x2B).contains(byte) || (0x2D...0x3A).contains(byte)
                || (0x3C...0x5B).contains(byte) || (0x5D...0x7E).contains(byte)) && byte != UInt8(ascii: "%")
        }
        if value.utf8.allSatisfy(allowed) { return value }
        var out = ""
        for byte in value.utf8 {
            if allowed(byte) {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }
}
