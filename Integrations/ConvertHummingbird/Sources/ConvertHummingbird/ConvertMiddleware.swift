import ConvertSwiftSDK
import Hummingbird

/// A request context that carries the request's Convert context, set by ``ConvertMiddleware``.
///
/// Adopt it in the app's own context type, as hummingbird-auth's `AuthRequestContext` is adopted:
///
/// ```swift
/// struct AppRequestContext: ConvertRequestContext {
///     var coreContext: CoreRequestContextStorage
///     var convert: ConvertContext?
///     init(source: Source) { coreContext = .init(source: source) }
/// }
/// ```
public protocol ConvertRequestContext: RequestContext {
    /// The visitor's context; `nil` until ``ConvertMiddleware`` has run.
    var convert: ConvertContext? { get set }
}

extension ConvertRequestContext {
    /// The visitor's context, or a 500 error when no ``ConvertMiddleware`` ran for this route.
    public func requireConvert() throws -> ConvertContext {
        guard let convert else {
            throw HTTPError(.internalServerError, message: "no ConvertMiddleware ran for this route")
        }
        return convert
    }
}

/// The request context of an app that needs nothing but Convert's.
public struct BasicConvertRequestContext: ConvertRequestContext {
    /// Hummingbird's own per-request values.
    public var coreContext: CoreRequestContextStorage
    /// The visitor's context, set by ``ConvertMiddleware``.
    public var convert: ConvertContext?

    /// A context for a new request.
    public init(source: Source) {
        coreContext = .init(source: source)
    }
}

/// Gives every request a Convert context for the visitor in its cookie.
///
/// It reads the visitor id from the ``VisitorCookie`` (a new random id when the request has
/// none), loads the visitor with `sdk.loadContext(visitorId:attributes:)` (from the shared store
/// when one is configured, e.g. Redis; otherwise the same as `createContext`), puts the context in
/// `context.convert` and, for a new visitor only, adds one `Set-Cookie` header to the response
/// (also to an error's response, when the error is an `HTTPResponseError`).
///
/// ```swift
/// let router = Router(context: AppRequestContext.self)
/// router.add(middleware: ConvertMiddleware(sdk: sdk) { request in
///     ["mobile": .bool(request.headers[.userAgent]?.contains("Mobile") ?? false)]
/// })
/// router.get("/") { _, context in
///     try context.requireConvert().variation(forExperience: "pricing-test")?.keyOrId ?? "control"
/// }
/// ```
public struct ConvertMiddleware<Context: ConvertRequestContext>: RouterMiddleware {
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

    public func handle(_ request: Request, context: Context,
                       next: (Request, Context) async throws -> Response) async throws -> Response {
        // The values as they came: HTTP/1.1 sends one Cookie field, and joining a single value
        // through `headers[.cookie]` costs a request about a microsecond.
        let cookies = request.headers[values: .cookie]
        let (visitorId, newCookie) = cookie.visitor(fromCookieHeader: cookies.count > 1 ? cookies.joined(separator: "; ") : cookies.first)
        var context = context
        context.convert = await sdk.loadContext(visitorId: visitorId, attributes: attributes(request))
        guard let setCookie = newCookie else { return try await next(request, context) }
        do {
            var response = try await next(request, context)
            response.headers[values: .setCookie].append(setCookie)
            return response
        } catch let error as any HTTPResponseError {
            throw SettingCookie(error: error, setCookie: setCookie)
        }
    }
}

/// An error response that keeps the new visitor's `Set-Cookie`.
struct SettingCookie: HTTPResponseError {
    let error: any HTTPResponseError
    let setCookie: String

    var status: HTTPResponse.Status { error.status }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = try error.response(from: request, context: context)
        response.headers[values: .setCookie].append(setCookie)
        return response
    }
}
