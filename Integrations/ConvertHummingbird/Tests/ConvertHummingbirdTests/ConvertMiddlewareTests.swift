import ConvertHummingbird
import ConvertSwiftSDK
import ConvertTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

struct ConvertMiddlewareTests {
    /// An app deciding the sample config's experience for the visitor in the cookie.
    func makeApp(_ sdk: ConvertSwiftSDK) -> some ApplicationProtocol {
        let router = Router(context: BasicConvertRequestContext.self)
        router.add(middleware: ConvertMiddleware(sdk: sdk, cookie: VisitorCookie(secure: false)) { request in
            ["desktop": true, "browser": .string(request.headers[.userAgent] ?? "FF")]
        })
        router.get("/") { _, context -> String in
            let convert = try context.requireConvert()
            convert.setLocationProperties(["location": "pricing"])
            return convert.variation(forExperience: "test-experience-ab-fullstack-1")?.keyOrId ?? "none"
        }
        router.get("/missing") { _, _ -> String in throw HTTPError(.notFound) }
        router.post("/buy") { _, context -> String in
            "\(try await context.requireConvert().trackConversion("button-primary-click"))"
        }
        return Application(router: router)
    }

    func makeSDK() async throws -> ConvertSwiftSDK {
        let sdk = ConvertSwiftSDK(configData: ConvertSwiftSDK.sampleConfig,
                                  configuration: ConvertConfiguration(sdkKey: "", networkTracking: false, persistence: .memory))
        try await sdk.ready(timeout: .seconds(5))
        return sdk
    }

    @Test func issuesTheCookieOnceAndKeepsTheVariation() async throws {
        let sdk = try await makeSDK()
        try await makeApp(sdk).test(.router) { client in
            let first = try await client.execute(uri: "/", method: .get)
            let setCookies = first.headers[values: .setCookie]
            try #require(setCookies.count == 1)
            #expect(setCookies[0].hasPrefix("\(VisitorCookie.defaultName)="))
            #expect(!setCookies[0].contains("Secure"))
            let pair = String(setCookies[0].prefix { $0 != ";" })
            let variation = String(buffer: first.body)
            #expect(variation != "none")

            for _ in 0..<3 {
                let next = try await client.execute(uri: "/", method: .get, headers: [.cookie: "theme=dark; \(pair)"])
                #expect(next.headers[values: .setCookie].isEmpty)
                #expect(String(buffer: next.body) == variation)
            }
        }
        await sdk.shutdown(timeout: .seconds(1))
    }

    @Test func eachNewVisitorGetsItsOwnId() async throws {
        let sdk = try await makeSDK()
        try await makeApp(sdk).test(.router) { client in
            let one = try await client.execute(uri: "/", method: .get).headers[.setCookie]
            let two = try await client.execute(uri: "/", method: .get).headers[.setCookie]
            #expect(one != nil && two != nil && one != two)
        }
        await sdk.shutdown(timeout: .seconds(1))
    }

    @Test func anErrorResponseKeepsTheNewCookie() async throws {
        let sdk = try await makeSDK()
        try await makeApp(sdk).test(.router) { client in
            let response = try await client.execute(uri: "/missing", method: .get)
            #expect(response.status == .notFound)
            #expect(response.headers[values: .setCookie].count == 1)
        }
        await sdk.shutdown(timeout: .seconds(1))
    }

    @Test func conversionsAreTrackedOncePerVisitor() async throws {
        let harness = TestSDK(data: ConvertSwiftSDK.sampleConfig)
        try await harness.sdk.ready(timeout: .seconds(5))
        try await makeApp(harness.sdk).test(.router) { client in
            let headers: HTTPFields = [.cookie: "\(VisitorCookie.defaultName)=buyer-1"]
            let first = try await client.execute(uri: "/buy", method: .post, headers: headers)
            let second = try await client.execute(uri: "/buy", method: .post, headers: headers)
            #expect(String(buffer: first.body).hasPrefix("tracked"))
            #expect(String(buffer: second.body).hasPrefix("duplicate"))
        }
        #expect(harness.sink.events(for: "buyer-1").filter { $0.eventType == "conversion" }.count == 1)
        await harness.sdk.shutdown(timeout: .seconds(1))
    }
}
