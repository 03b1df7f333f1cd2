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
/// if known == nil { response.headers["Set-Cookie"] = cookie.setCookieHeader(for: visitorId) }
/// ```
public struct VisitorCookie: Sendable, Hashable {
    /// Which cross-site requests carry the cookie.
    public enum SameSite: String, Sendable, Hashable {
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

    /// The visitor id in a `Cookie` header value (`"a=1; convert_visitor_id=abc"`), or `nil`
    /// when the header lacks the cookie or its value is not a usable visitor id (empty, or
    /// longer than ``ConvertContext/maximumVisitorIdBytes``). Quoted values are unquoted and
    /// percent-escapes decoded; the first cookie of the name wins; malformed pairs are skipped.
    public func visitorId(fromCookieHeader header: String?) -> String? {
        guard let header else { return nil }
        for pair in header.split(separator: ";", omittingEmptySubsequences: true) {
            guard let equals = pair.firstIndex(of: "=") else { continue }
            let key = pair[..<equals].trimmingCharacters(in: .whitespaces)
            guard key == name else { continue }
            var value = pair[pair.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = String(value.dropFirst().dropLast())
            }
            let decoded = value.removingPercentEncoding ?? value
            let usable = !decoded.isEmpty && decoded.utf8.count <= ConvertContext.maximumVisitorIdBytes
                && !decoded.allSatisfy(\.isWhitespace)
            return usable ? decoded : nil
        }
        return nil
    }

    /// The `Set-Cookie` header value that stores `visitorId` (percent-escaped where a cookie
    /// value cannot hold a character).
    public func setCookieHeader(for visitorId: String) -> String {
        var parts = ["\(name)=\(Self.escape(visitorId))", "Path=\(path)", "Max-Age=\(maxAge.components.seconds)"]
        if let domain { parts.append("Domain=\(domain)") }
        if secure || sameSite == .none { parts.append("Secure") }
        if httpOnly { parts.append("HttpOnly") }
        parts.append("SameSite=\(sameSite.rawValue)")
        return parts.joined(separator: "; ")
    }

    /// A new random visitor id (a lowercase UUID, as the SDK's own auto ids).
    public static func newVisitorId() -> String { UUID().uuidString.lowercased() }

    /// RFC 6265 cookie-octets pass; everything else (and `%`) is percent-escaped.
    private static func escape(_ value: String) -> String {
        var out = ""
        for byte in value.utf8 {
            let allowed = byte == 0x21 || (0x23...0x2B).contains(byte) || (0x2D...0x3A).contains(byte)
                || (0x3C...0x5B).contains(byte) || (0x5D...0x7E).contains(byte)
            if allowed && byte != UInt8(ascii: "%") {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }
}
