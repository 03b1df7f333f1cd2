import ConvertLogging
import ConvertSwiftSDK
import ConvertTesting
import ConvertTransport
import ConvertVapor
import Foundation
import InMemoryLogging
import Logging
import Testing
import Vapor
import VaporTesting

struct ConvertVaporTests {
    /// Routes deciding the sample config's experience and tracking its revenue goal.
    func configure(_ app: Application, sdk: ConvertSwiftSDK) {
        app.convert.use(sdk, shutdownTimeout: .seconds(5))
        let shop = app.grouped(app.convert.middleware(cookie: VisitorCookie(secure: false)) { request in
            ["desktop": true, "browser": .string(request.headers.first(name: .userAgent) ?? "FF")]
        })
        shop.get { req -> String in
            let convert = try req.convert
            convert.setLocationProperties(["location": "pricing"])
            return convert.variation(forExperience: "test-experience-ab-fullstack-1")?.keyOrId ?? "none"
        }
        shop.get("missing") { _ -> String in throw Abort(.notFound) }
        shop.post("buy") { req async throws -> String in
            "\(try await req.convert.trackConversion("button-primary-click"))"
        }
        app.get("plain") { _ -> String in "no Convert work here" }
    }

    @Test func routesOutsideTheGroupDoNoConvertWork() async throws {
        let sdk = sampleSDK()
        try await sdk.ready(timeout: .seconds(5))
        try await withApp(configure: { configure($0, sdk: sdk) }) { app in
            let plain = try await app.testing().sendRequest(.GET, "/plain")
            #expect(plain.status == .ok)
            #expect(plain.headers[.setCookie].isEmpty)
        }
    }

    @Test func theLifecycleRunsTheTasksFromBootAndShutsDownOnceInOrder() async throws {
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "app", factory: { _ in handler })
        logger.logLevel = .info
        let transport = StubTransport { _ in ConvertTransport.HTTPResponse(status: 200) }
        let configuration = ConvertConfiguration(sdkKey: "10035569/10034190", eventsBatchSize: 1000,
                                                 eventsReleaseIntervalMs: 600_000, persistence: .memory)
        let sdk = ConvertSwiftSDK(configuration: configuration, logger: logger,
                                  directData: ConvertSwiftSDK.sampleConfig, transport: transport)
        try await sdk.ready(timeout: .seconds(5))
        let steps = Steps()

        try await withApp(configure: { app in
            app.logger = logger
            app.convert.use(sdk, whileRunning: [{
                steps.add("task started")
                while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(5)) }
                // Cancelled after the SDK's shutdown: the delivery is done.
                steps.add("task ended, sent \(sdk.trackingCounters.sent)")
            }], closers: [{ steps.add("closer 1") }, { struct Broken: Error {}; throw Broken() }, { steps.add("closer 3") }])
            let shop = app.grouped(app.convert.middleware(cookie: VisitorCookie(secure: false)))
            shop.post("buy") { req async throws -> String in "\(try await req.convert.trackConversion("button-primary-click"))" }
        }) { app in
            try await app.testing().test(.POST, "/buy", headers: ["Cookie": "convert_visitor_id=buyer-1"]) { response in
                #expect(response.body.string == "tracked(eventCount: 1)")
            }
            let deadline = ContinuousClock.now + .seconds(30)
            while steps.all.isEmpty, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        }
        #expect(steps.all == ["task started", "task ended, sent 1", "closer 1", "closer 3"])
        let reports = handler.entries.filter { $0.message.description.contains("shut down") }
        #expect(reports.count == 1, "the SDK's report, once: \(reports.map(\.message))")
        #expect(handler.entries.contains { $0.level == .error && $0.message.description.contains("closer 2 of 3 failed") })
    }

    func sampleSDK() -> ConvertSwiftSDK {
        ConvertSwiftSDK(configData: ConvertSwiftSDK.sampleConfig,
                        configuration: ConvertConfiguration(sdkKey: "", networkTracking: false, persistence: .memory))
    }

    @Test func issuesTheCookieOnceAndKeepsTheVariation() async throws {
        let sdk = sampleSDK()
        try await sdk.ready(timeout: .seconds(5))
        try await withApp(configure: { configure($0, sdk: sdk) }) { app in
            let first = try await app.testing().sendRequest(.GET, "/")
            let setCookies = first.headers[.setCookie]
            try #require(setCookies.count == 1)
            #expect(setCookies[0].hasPrefix("\(VisitorCookie.defaultName)="))
            let pair = String(setCookies[0].prefix { $0 != ";" })
            let variation = first.body.string
            #expect(variation != "none")

            for _ in 0..<3 {
                let next = try await app.testing().sendRequest(.GET, "/", headers: ["Cookie": "a=1; \(pair)"])
                #expect(next.headers[.setCookie].isEmpty)
                #expect(next.body.string == variation)
            }
            let other = try await app.testing().sendRequest(.GET, "/")
            #expect(other.headers[.setCookie].count == 1 && other.headers[.setCookie] != setCookies)
        }
    }

    @Test func anAbortKeepsTheNewCookie() async throws {
        let sdk = sampleSDK()
        try await sdk.ready(timeout: .seconds(5))
        try await withApp(configure: { configure($0, sdk: sdk) }) { app in
            let response = try await app.testing().sendRequest(.GET, "/missing")
            #expect(response.status == .notFound)
            #expect(response.headers[.setCookie].count == 1)
        }
    }

    @Test func pendingEventsAreDeliveredWhenTheAppShutsDown() async throws {
        // A real tracking queue that would wait ten minutes before sending, over a stub network.
        let transport = StubTransport { _ in ConvertTransport.HTTPResponse(status: 200) }
        let configuration = ConvertConfiguration(sdkKey: "10035569/10034190", eventsBatchSize: 1000,
                                                 eventsReleaseIntervalMs: 600_000, persistence: .memory)
        let sdk = ConvertSwiftSDK(configuration: configuration,
                                  ports: .live(configuration, directData: ConvertSwiftSDK.sampleConfig, transport: transport))
        try await sdk.ready(timeout: .seconds(5))

        try await withApp(configure: { configure($0, sdk: sdk) }) { app in
            var answers: [String] = []
            for buyer in ["buyer-1", "buyer-2", "buyer-1"] {
                answers.append(try await app.testing().sendRequest(.POST, "/buy", headers: ["Cookie": "convert_visitor_id=\(buyer)"]).body.string)
            }
            #expect(answers == ["tracked(eventCount: 1)", "tracked(eventCount: 1)", "duplicate"])
            #expect(transport.requests.isEmpty)
        }

        // withApp shut the app down: the lifecycle handler delivered the queue.
        let bodies = transport.requests.compactMap(\.body)
        #expect(bodies.count == 1)
        let sent = try bodies.flatMap(Self.conversions)
        #expect(sent.sorted() == ["buyer-1", "buyer-2"])
        #expect(await sdk.createContext(visitorId: "buyer-3").trackConversion("button-primary-click") == .dropped(eventCount: 1))
    }

    /// The visitors of the conversions in a tracking request body.
    static func conversions(in body: Data) throws -> [String] {
        struct Batch: Decodable {
            struct Visitor: Decodable {
                struct Event: Decodable { let eventType: String }
                let visitorId: String
                let events: [Event]
            }
            let visitors: [Visitor]
        }
        return try JSONDecoder().decode(Batch.self, from: body).visitors.flatMap { visitor in
            visitor.events.filter { $0.eventType == "conversion" }.map { _ in visitor.visitorId }
        }
    }
}

/// What happened, in order, across tasks.
final class Steps: @unchecked Sendable {
    private let lock = NSLock()
    private var steps: [String] = []

    func add(_ step: String) {
        lock.lock()
        steps.append(step)
        lock.unlock()
    }

    var all: [String] {
        lock.lock()
        defer { lock.unlock() }
        return steps
    }
}
