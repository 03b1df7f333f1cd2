import ConvertSwiftSDK
import Vapor

/// Gives every request a Convert context for the visitor in its cookie.
///
/// It reads the visitor id from the ``VisitorCookie`` (a new random id when the request has
/// none), loads the visitor with `sdk.loadContext(visitorId:attributes:)` (from the shared store
/// when one is configured, e.g. Redis; otherwise the same as `createContext`), keeps the context
/// for `req.convert` and, for a new visitor only, adds one `Set-Cookie` header to the response
/// (also to an `AbortError`'s response). Made by `app.convert.middleware(cookie:attributes:)`.
public struct ConvertMiddleware: AsyncMiddleware {
    /// The SDK contexts are made from.
    public let sdk: ConvertSwiftSDK
    /// The cookie that keeps the visitor id.
    public let cookie: VisitorCookie
    private let attributes: @Sendable (Request) -> [String: JSONValue]

    /// - Parameters:
    ///   - sdk: the SDK contexts are made from.
    ///   - cookie: the visitor id's cookie. The default is HTTPS-only (`Secure`); for plain HTTP on
    ///     localhost pass `VisitorCookie(secure: false)`, and leave `domain` `nil` (browsers refuse
    ///     `Domain=localhost`). Its settings are checked here: an invalid name, path or domain
    ///     stops the program.
    ///   - attributes: the visitor's attributes (audience data) taken from the request.
    public init(sdk: ConvertSwiftSDK, cookie: VisitorCookie = VisitorCookie(),
                attributes: @escaping @Sendable (Request) -> [String: JSONValue] = { _ in [:] }) {
        do {
            try cookie.validate()
        } catch {
            preconditionFailure("ConvertMiddleware: \(error)")
        }
        self.sdk = sdk
        self.cookie = cookie
        self.attributes = attributes
    }

    public func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        let cookies = request.headers[.cookie]
        let (visitorId, newCookie) = cookie.visitor(fromCookieHeader: cookies.isEmpty ? nil : cookies.joined(separator: "; "))
        request.storage[ConvertContextKey.self] = await sdk.loadContext(visitorId: visitorId, attributes: attributes(request))
        guard let setCookie = newCookie else { return try await next.respond(to: request) }
        do {
            let response = try await next.respond(to: request)
            response.headers.add(name: .setCookie, value: setCookie)
            return response
        } catch let error as any AbortError {
            var headers = error.headers
            headers.add(name: .setCookie, value: setCookie)
            throw Abort(error.status, headers: headers, reason: error.reason)
        }
    }
}

struct ConvertContextKey: StorageKey {
    typealias Value = ConvertContext
}

extension Request {
    /// The visitor's Convert context, set by ``ConvertMiddleware``; throws a 500 error when no
    /// ``ConvertMiddleware`` ran for this route.
    public var convert: ConvertContext {
        get throws {
            guard let context = storage[ConvertContextKey.self] else {
                throw Abort(.internalServerError, reason: "no ConvertMiddleware ran for this route")
            }
            return context
        }
    }
}
