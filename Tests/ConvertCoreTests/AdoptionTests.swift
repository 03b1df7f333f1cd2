import ConvertCookie
import ConvertCore
import ConvertEnvironment
import ConvertEvents
import ConvertMemory
import ConvertModel
import ConvertRules
import ConvertStorage
import ConvertTesting
import Foundation
import Testing

@Suite struct VisitorCookieTests {
    let cookie = VisitorCookie()

    @Test func readsTheVisitorIdAmongSeveralCookies() {
        #expect(cookie.visitorId(fromCookieHeader: "a=1; convert_visitor_id=abc-123; b=2") == "abc-123")
        #expect(cookie.visitorId(fromCookieHeader: "convert_visitor_id=first;convert_visitor_id=second") == "first")
        #expect(cookie.visitorId(fromCookieHeader: "  convert_visitor_id = spaced  ") == "spaced")
        #expect(cookie.visitorId(fromCookieHeader: "a=1;;\tconvert_visitor_id=\ttabbed\t; =x") == "tabbed")
        #expect(cookie.visitorId(fromCookieHeader: "xconvert_visitor_id=no; convert_visitor_idx=no") == nil)
    }

    @Test func unquotesAndDecodesValues() {
        #expect(cookie.visitorId(fromCookieHeader: #"convert_visitor_id="quoted value""#) == "quoted value")
        #expect(cookie.visitorId(fromCookieHeader: "convert_visitor_id=caf%C3%A9%3B%20x") == "café; x")
        #expect(cookie.visitorId(fromCookieHeader: #"convert_visitor_id=""#) == #"""#, "a lone quote is a value, not quotes")
    }

    @Test func theLongestIdACookieCarriesIsTheLongestAContextAccepts() throws {
        #expect(VisitorCookie.maximumVisitorIdBytes == ConvertContext.maximumVisitorIdBytes)
        let longest = String(repeating: "x", count: ConvertContext.maximumVisitorIdBytes)
        #expect(cookie.visitorId(fromCookieHeader: "convert_visitor_id=" + longest) == longest)
        #expect(throws: VisitorCookie.InvalidCookie.self) { try cookie.makeSetCookieHeader(for: longest + "x") }
    }

    @Test func badInputGivesNoVisitorId() {
        for header in [nil, "", ";;;", "garbage", "=value", "convert_visitor_id", "convert_visitor_id=",
                       #"convert_visitor_id="""#, "convert_visitor_id=%20%20",
                       "convert_visitor_id=" + String(repeating: "x", count: ConvertContext.maximumVisitorIdBytes + 1)] {
            #expect(cookie.visitorId(fromCookieHeader: header) == nil, "\(String(describing: header))")
        }
        #expect(cookie.visitorId(fromCookieHeader: "bad pair; convert_visitor_id=ok") == "ok", "malformed pairs are skipped")
    }

    @Test func setCookieHasSecureDefaultsAndRoundTrips() throws {
        let header = try cookie.makeSetCookieHeader(for: "visitor 1;é")
        #expect(header == "convert_visitor_id=visitor%201%3B%C3%A9; Path=/; Max-Age=15552000; Secure; HttpOnly; SameSite=Lax")
        let value = String(header.split(separator: ";")[0])
        #expect(cookie.visitorId(fromCookieHeader: value) == "visitor 1;é")
        let crossSite = VisitorCookie(name: "vid", domain: "example.com", secure: false, httpOnly: false, sameSite: .none)
        #expect(try crossSite.makeSetCookieHeader(for: "x") == "vid=x; Path=/; Max-Age=15552000; Domain=example.com; Secure; SameSite=None",
                "SameSite=None is always Secure, as browsers require")
        let id = VisitorCookie.newVisitorId()
        #expect(id.count == 36 && id == id.lowercased() && id != VisitorCookie.newVisitorId())
    }

    @Test func newVisitorIdsAreVersionFourUUIDsAsFoundationWritesThem() {
        // The same bits through Foundation's own formatter: the text must be identical.
        var generator = SeededGenerator(seed: 11)
        for _ in 0..<1_000 {
            let high: UInt64 = generator.next(), low: UInt64 = generator.next()
            let text = RandomUUID.string(high: high, low: low)
            let uuid = try! #require(UUID(uuidString: text))
            let bytes = withUnsafeBytes(of: uuid.uuid) { Array($0) }
            let version = bytes[6] >> 4, variant = bytes[8] >> 6
            #expect(version == 4 && variant == 0b10)
            let kept = bytes.enumerated().allSatisfy { index, byte in
                let source = index < 8 ? UInt8(truncatingIfNeeded: high >> (56 - 8 * index))
                    : UInt8(truncatingIfNeeded: low >> (56 - 8 * (index - 8)))
                let mask: UInt8 = index == 6 ? 0x0F : index == 8 ? 0x3F : 0xFF
                return byte & mask == source & mask
            }
            #expect(kept && text == uuid.uuidString.lowercased())
        }
        let ids = Set((0..<10_000).map { _ in VisitorCookie.newVisitorId() })
        #expect(ids.count == 10_000 && ids.allSatisfy { UUID(uuidString: $0) != nil && $0 == $0.lowercased() })
    }

    /// The random words come from a buffer read from the kernel; a forked process reads its own
    /// rather than handing out its parent's.
    @Test func randomWordsAreBufferedAndAForkReadsAfresh() {
        var pool = RandomPool()
        let first = pool.next()
        var copy = pool
        // Without a fork, two copies of one buffer give the same words: it is a buffer.
        #expect(pool.next() == copy.next())
        let words = (0..<300).map { _ in pool.next() }
        #expect(Set(words.map(\.0)).count == 300, "past one buffer (256 pairs), still distinct")
        copy = pool
        RandomPool.noteFork()
        let afterFork = pool.next(), copyAfterFork = copy.next()
        #expect(afterFork != copyAfterFork, "each read afresh after the fork")
        #expect(first != afterFork)
    }

    @Test func controlCharactersAndOverlongIdsNeverReachAHeader() {
        for header in ["convert_visitor_id=a%0D%0ASet-Cookie:%20admin=1", "convert_visitor_id=a%00b", "convert_visitor_id=%7F"] {
            #expect(cookie.visitorId(fromCookieHeader: header) == nil, "\(header)")
        }
        for id in ["", "a\r\nLocation: https://evil.example", "nul\u{0}", String(repeating: "x", count: 1_025)] {
            #expect(throws: VisitorCookie.InvalidCookie.self, "\(id.prefix(20))") { try cookie.makeSetCookieHeader(for: id) }
        }
        for bad in [VisitorCookie(name: "a=b"), VisitorCookie(name: "id\r\nX-Injected: 1"), VisitorCookie(path: "/; Domain=evil"),
                    VisitorCookie(domain: "example.com\r\nX: 1"), VisitorCookie(domain: "")] {
            #expect(throws: VisitorCookie.InvalidCookie.self) { try bad.makeSetCookieHeader(for: "ok") }
        }
    }

    @Test func aRequestsVisitorIsTheCookiesOrANewOneWithItsCookie() throws {
        let cookie = VisitorCookie(secure: false)
        try cookie.validate()
        let known = cookie.visitor(fromCookieHeader: "a=1; \(VisitorCookie.defaultName)=visitor-9")
        #expect(known.id == "visitor-9" && known.setCookie == nil)
        let new = cookie.visitor(fromCookieHeader: nil)
        #expect(new.setCookie == (try cookie.makeSetCookieHeader(for: new.id)))
        #expect(cookie.visitorId(fromCookieHeader: "\(VisitorCookie.defaultName)=\(new.id)") == new.id)
        #expect(throws: VisitorCookie.InvalidCookie.self) { try VisitorCookie(name: "a=b").validate() }
    }

    @Test func aNewlineInAVisitorIdCannotForgeALogLine() {
        let harness = TestSDK(data: nil)  // not ready, logging at debug: the warning names the visitor
        let context = harness.sdk.createContext(visitorId: "evil\n[Convert] ERROR forged")
        #expect(context.variation(forExperience: "any") == nil)
        let named = harness.logs.records.compactMap { $0.metadata["convert.visitor"] }
        #expect(!named.isEmpty)
        #expect(named.allSatisfy { !$0.contains("\n") && $0.contains("evil\\n[Convert]") }, "\(named)")
        #expect(harness.logs.messages.allSatisfy { !$0.contains("evil") }, "visitor ids stay out of the messages")
    }

    @Test func visitorIdsAreLoggedAtDebugOnly() {
        let harness = TestSDK(data: nil, configuration: ConvertConfiguration(sdkKey: "test-key", logLevel: .info))
        _ = harness.sdk.createContext(visitorId: "visitor-7").variation(forExperience: "any")
        let records = harness.logs.records.filter { $0.metadata["convert.call"] == "variation(forExperience:)" }
        #expect(!records.isEmpty)
        #expect(records.allSatisfy { $0.metadata["convert.visitor"] == nil && $0.metadata["convert.reason"] == "notReady" })
    }
}

@Suite struct FeatureVariableTests {
    private struct Extra: Decodable, Equatable {
        let foo: String
        let v: Int
    }

    private func pricingFeature(_ key: String) async throws -> BucketedFeature {
        let harness = try TestSDK(fixture: .cdnConfigBaseline)
        try await harness.sdk.ready(timeout: .patience)
        let context = harness.sdk.createContext(visitorId: "variables")
        context.setLocationProperties(["location": "pricing"])
        return context.feature(key)
    }

    @Test func decodableVariables() async throws {
        let feature = try await pricingFeature("feature-2")
        try #require(feature.isEnabled)
        #expect(try feature.decode(Extra.self, forKey: "additionalData") == Extra(foo: "bar", v: 2))
        #expect(try feature.decode(Int.self, forKey: "price") == 100)
        #expect(try feature.decode(Double.self, forKey: "button-height") == 40)
        #expect(throws: FeatureVariableError.missing(feature: "feature-2", variable: "nope")) {
            try feature.decode(Int.self, forKey: "nope")
        }
        do {
            _ = try feature.decode([String].self, forKey: "additionalData")
            Issue.record("an object decoded as an array")
        } catch {
            guard case .typeMismatch(let name, let variable, _) = error else { throw error }
            #expect(name == "feature-2" && variable == "additionalData")
            #expect(error.localizedDescription.contains("additionalData"))
        }
    }

    @Test func defaultValueAccessors() async throws {
        let feature = try await pricingFeature("feature-2")
        #expect(feature.value(forKey: "price", default: 0) == 100)
        #expect(feature.value(forKey: "missing", default: "fallback") == "fallback")
        #expect(feature.value(forKey: "additionalData", default: 7) == 7, "a value that does not decode falls back")
        #expect(feature.int("button-height", default: 0) == 40)
        #expect(feature.int("missing", default: 3) == 3)
        #expect(feature.double("price", default: 0) == 100)
        #expect(feature.string("missing", default: "x") == "x")
        #expect(feature.bool("missing", default: true))

        let disabled = try await pricingFeature("not-attached-feature-3")
        #expect(!disabled.isEnabled)
        #expect(disabled.value(forKey: "fee", default: 5) == 5)
        #expect(throws: FeatureVariableError.self) { try disabled.decode(Int.self, forKey: "fee") }
    }
}

@Suite struct PublicErrorTests {
    @Test func publicErrorsAreLocalized() {
        let errors: [any Error] = [
            ConvertError.readyTimedOut(milliseconds: 5), ConvertError.invalidConfiguration("empty key"),
            StorageError(operation: "open", target: "/x", reason: "Permission denied (EACCES)"),
            ConfigDecodingError(.invalidJSON(offset: 3, reason: "unexpected end")), JSONParseError.empty,
            FeatureVariableError.missing(feature: "f", variable: "v"),
        ]
        for error in errors {
            #expect(error.localizedDescription == "\(error)", "\(type(of: error)) reads the same everywhere")
            #expect((error as? any LocalizedError)?.errorDescription != nil)
        }
    }
}

@Suite struct EventSequenceTests {
    @Test func eventsArriveAsAnAsyncSequenceAndTheSubscriptionEnds() async throws {
        let hub = SystemEventHub()
        let sink = RecordingTrackingSink()
        let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "k", persistence: .memory), ports: ConvertPorts(
            configSource: StubConfigSource(initial: try Fixtures.data(.cdnConfigBaseline)), visitorStore: MemoryVisitorDataStore(),
            visitorIdStore: MemoryVisitorIdStore(), trackingSink: sink, events: hub))
        try await sdk.ready(timeout: .patience)
        var received: BucketingPayload?
        var variation: BucketedVariation?
        do {
            let events = sdk.events(of: [.bucketing])
            #expect(hub.listenerCount == 1)
            let context = sdk.createContext(visitorId: "streamed", attributes: ["desktop": true, "browser": "FF"])
            context.setLocationProperties(["location": "pricing"])
            variation = context.variation(forExperience: "test-experience-ab-fullstack-1")
            for await event in events {
                if case .bucketing(let info) = event {
                    received = info
                    break
                }
            }
        }
        #expect(received?.visitorId == "streamed")
        #expect(received?.variationId == variation?.id)
        #expect(variation != nil)
        // The stream is released with its scope; its termination cancels the subscription.
        try await waitUntil { hub.listenerCount == 0 }
    }
}

private func waitUntil(timeout: Duration = .patience, _ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("condition not met within \(timeout)")
            return
        }
        try await Task.sleep(for: .milliseconds(5))
    }
}

@Suite struct ConfigErrorPositionTests {
    @Test func aBrokenConfigIsReportedByLineAndColumn() async throws {
        let broken = Data("{\n  \"account_id\": \"1\",\n  \"project\": {\"id\": é}\n}".utf8)
        let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "", persistence: .memory), ports: ConvertPorts(
            configSource: DirectConfigSource(bytes: broken), visitorStore: MemoryVisitorDataStore(),
            visitorIdStore: MemoryVisitorIdStore(), trackingSink: RecordingTrackingSink()))
        do {
            try await sdk.ready(timeout: .patience)
            Issue.record("broken JSON was accepted")
        } catch let error as ConvertError {
            guard case .invalidConfiguration(let why) = error else { throw error }
            #expect(why.contains("line 3, column 21"), "\(why)")
        }
        #expect(JSONParser.lineAndColumn(ofByte: 0, in: Array("x".utf8)) == (1, 1))
        #expect(JSONParser.lineAndColumn(ofByte: 4, in: Array("é\nab".utf8)) == (2, 2), "columns count characters")
    }
}
