import ConvertFileStorage
import ConvertMemory
import ConvertSharedStore
import ConvertSwiftSDK
import ConvertTesting
import ConvertVisitor
import Foundation
import Testing

// A returning visitor's audiences read its report segments as it gave them. Every expected value
// below is what Convert's JavaScript SDK 5.0.1 decides and stores for the same config and
// visitor lines, one SDK instance keeping its visitor store across lines.

/// One experience per rule; every audience is transient (re-checked on each visit) and every
/// experience sends all traffic to variation `v`, so a variation means "the audience matched".
private let rules: [(experience: String, key: String, operator: String, value: String)] = [
    ("dev", "devices", "lessEqual", "z"),
    ("ctry", "country", "less", "zzz"),
    ("brEmpty", "browser", "equals", ""),
    ("camp", "campaign", "contains", "8500600,x"),
    ("srcObj", "source", "equals", "[object Object]"),
    ("vtNotNull", "visitorType", "not_exists", ""),
    ("devS", "devices", "equals", "s"),
    ("ctryNum", "country", "equals", "1e+21"),
]

private func shapesConfig() throws -> Data {
    var experiences: [[String: Any]] = []
    var audiences: [[String: Any]] = []
    for (i, rule) in rules.enumerated() {
        let audienceId = String(500 + i), experienceId = String(9000 + i)
        audiences.append(["id": audienceId, "key": "a-\(rule.experience)", "name": rule.experience, "type": "transient",
                          "rules": ["OR": [["AND": [["OR_WHEN": [[
                              "rule_type": "generic_text_key_value", "key": rule.key, "value": rule.value,
                              "matching": ["match_type": rule.operator, "negated": false]]]]]]]]])
        experiences.append([
            "id": experienceId, "key": rule.experience, "name": rule.experience, "type": "a/b_fullstack", "status": "active",
            "settings": ["matching_options": ["audiences": "any", "locations": "any"]],
            "locations": [String](), "audiences": [audienceId], "goals": [String](),
            "variations": [
                ["id": experienceId + "1", "key": "v", "name": "v", "status": "running", "traffic_allocation": 100.0, "changes": [Any]()],
                ["id": experienceId + "2", "key": "w", "name": "w", "status": "running", "traffic_allocation": 0.0, "changes": [Any]()],
            ],
        ])
    }
    return try JSONSerialization.data(withJSONObject: [
        "account_id": "100", "project": ["id": "200", "name": "p", "type": "fullstack", "settings": [String: Any]()],
        "experiences": experiences, "audiences": audiences, "segments": [Any](), "goals": [Any](), "locations": [Any](),
        "archived_experiences": [Any](), "features": [Any](),
    ])
}

/// A visit: who, with which attributes; the experiences JS gives a variation (`v`) and the
/// segments JS stores after it.
private struct Visit: Sendable {
    let visitorId: String
    let attributes: [String: JSONValue]
    let matched: Set<String>
    let stored: [String: JSONValue]
}

private let firstVisitOfA: [String: JSONValue] = [
    "devices": "s", "country": 1e21, "browser": "", "campaign": "8500600,x", "source": ["pro": 1], "visitorType": nil,
]
private let visits: [Visit] = [
    Visit(visitorId: "a", attributes: firstVisitOfA,
          matched: ["brEmpty", "camp", "ctryNum", "dev", "devS", "vtNotNull"], stored: firstVisitOfA),
    // Returning with nothing: the same answers from the stored values (scalars not made lists,
    // 1e21 not made "1e+21", the object not made "[object Object]", null kept).
    Visit(visitorId: "a", attributes: [:],
          matched: ["brEmpty", "camp", "ctryNum", "dev", "devS", "vtNotNull"], stored: firstVisitOfA),
    Visit(visitorId: "b", attributes: ["browser": [], "devices": "", "source": ["pro": 1]],
          matched: ["dev"], stored: ["browser": [], "devices": "", "source": ["pro": 1]]),
    // A list replaces a scalar; objects are merged member by member.
    Visit(visitorId: "b", attributes: ["source": ["x": 2], "devices": ["t"]],
          matched: [], stored: ["browser": [], "devices": ["t"], "source": ["pro": 1, "x": 2]]),
    // An empty array is not "": browser equals "" stays unmatched.
    Visit(visitorId: "b", attributes: [:],
          matched: [], stored: ["browser": [], "devices": ["t"], "source": ["pro": 1, "x": 2]]),
    Visit(visitorId: "c", attributes: ["devices": ["a", "b"], "country": "US", "plan": "pro"],
          matched: ["ctry"], stored: ["devices": ["a", "b"], "country": "US"]),
    // Arrays are united (the new elements first); a later null replaces a value.
    Visit(visitorId: "c", attributes: ["devices": ["c", "a"], "country": nil],
          matched: [], stored: ["devices": ["c", "a", "b"], "country": nil]),
    Visit(visitorId: "c", attributes: [:],
          matched: [], stored: ["devices": ["c", "a", "b"], "country": nil]),
]

/// Decides every rule's experience for `visit` and checks the answers and the stored segments.
private func check(_ context: ConvertContext, _ visit: Visit, _ where: String, _ line: Int) async {
    var matched: Set<String> = []
    for rule in rules where context.variation(forExperience: rule.experience)?.key == "v" { matched.insert(rule.experience) }
    #expect(matched == visit.matched, "\(`where`), visit \(line) (\(visit.visitorId))")
    #expect(context.segmentValues() == visit.stored, "\(`where`), visit \(line) (\(visit.visitorId)): stored segments")
}

@Suite struct ReturningVisitorSegmentTests {
    @Test func inMemoryAReturningVisitorIsDecidedAsJavaScriptDecidesIt() async throws {
        let harness = TestSDK(data: try shapesConfig())
        try await harness.sdk.ready(timeout: .patience)
        for (line, visit) in visits.enumerated() {
            await check(harness.sdk.createContext(visitorId: visit.visitorId, attributes: visit.attributes), visit, "memory", line)
        }
    }

    @Test func onFileEachVisitIsDecidedByANewSDKFromTheFilesOfThePreviousOne() async throws {
        let root = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        let config = try shapesConfig()
        var directory = root.appendingPathComponent("visit-0")
        for (line, visit) in visits.enumerated() {
            let store = try FileVisitorDataStore(directory: directory)
            let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "100/200", persistence: .memory),
                                      ports: ConvertPorts(configSource: StubConfigSource(initial: config), visitorStore: store,
                                                          visitorIdStore: MemoryVisitorIdStore(),
                                                          trackingSink: RecordingTrackingSink()))
            try await sdk.ready(timeout: .patience)
            await check(sdk.createContext(visitorId: visit.visitorId, attributes: visit.attributes), visit, "file", line)
            _ = await store.flush()
            // The next SDK reads a copy of these files alone, as a new process would (this store
            // may outlive the loop a moment, and would then be a second writer beside it).
            let next = root.appendingPathComponent("visit-\(line + 1)")
            try FileManager.default.copyItem(at: directory, to: next)
            directory = next
        }
        let reopened = try FileVisitorDataStore(directory: directory)
        await reopened.prepare()
        let last = try #require(visits.last)
        #expect(reopened.data(for: VisitorKey(accountId: "100", projectId: "200", visitorId: "c"))?.segmentValues == last.stored)
    }

    @Test func throughTheSharedStoreEachVisitIsDecidedByTheOtherInstance() async throws {
        let backend = MemoryVisitorBackend()
        let config = try shapesConfig()
        var instances: [ConvertSwiftSDK] = []
        for _ in 0..<2 {
            let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "100/200", persistence: .memory),
                                      ports: ConvertPorts(configSource: StubConfigSource(initial: config),
                                                          visitorStore: WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore()),
                                                          visitorIdStore: MemoryVisitorIdStore(),
                                                          trackingSink: RecordingTrackingSink()))
            try await sdk.ready(timeout: .patience)
            instances.append(sdk)
        }
        for (line, visit) in visits.enumerated() {
            let context = await instances[line % 2].loadContext(visitorId: visit.visitorId, attributes: visit.attributes)
            await check(context, visit, "shared store", line)
            #expect(await context.saveVisitorData())
        }
        let stored = try await backend.load(VisitorKey(accountId: "100", projectId: "200", visitorId: "a"))
        #expect(stored?.segmentValues == firstVisitOfA, "the backend keeps the values as given")
    }

    @Test func aLoadedContextHasStoredItsSegmentsOverTheLoadedOnesBeforeAnyDecision() async throws {
        let backend = MemoryVisitorBackend()
        _ = try await backend.save(VisitorKey(accountId: "100", projectId: "200", visitorId: "b"),
                                   VisitorData(bucketing: [:], segmentValues: ["devices": "", "source": ["pro": 1]]))
        let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "100/200", persistence: .memory),
                                  ports: ConvertPorts(configSource: StubConfigSource(initial: try shapesConfig()),
                                                      visitorStore: WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore()),
                                                      visitorIdStore: MemoryVisitorIdStore(),
                                                      trackingSink: RecordingTrackingSink()))
        try await sdk.ready(timeout: .patience)
        let context = await sdk.loadContext(visitorId: "b", attributes: ["source": ["x": 2], "devices": ["t"]])
        // As JS stores a context's report keys when it is created: here, once the visitor is loaded.
        #expect(context.segmentValues() == ["devices": ["t"], "source": ["pro": 1, "x": 2]])
    }

    @Test func trackingSendsTheStringFormOfTheStoredValues() async throws {
        let harness = TestSDK(data: try shapesConfig())
        try await harness.sdk.ready(timeout: .patience)
        let context = harness.sdk.createContext(visitorId: "a", attributes: firstVisitOfA)
        #expect(context.variation(forExperience: "dev")?.key == "v")
        let event = try #require(harness.sink.events(for: "a").first)
        #expect(event.segments == VisitorSegments(country: "1e+21", browser: "", devices: ["s"], source: "[object Object]",
                                                  campaign: "8500600,x"))
        #expect(context.segments() == event.segments)
    }

    @Test func storedSegmentValuesKeepTheirShapeThroughEveryStore() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("visitors")
        try await VisitorDataStoreContract.verify { MemoryVisitorDataStore() }
        try await VisitorDataStoreContract.verify(make: { try FileVisitorDataStore(directory: file) },
                                                  reopen: { try FileVisitorDataStore(directory: file) })
        let backend = MemoryVisitorBackend()
        try await VisitorDataStoreContract.verify { WriteBehindVisitorStore(backend: backend, local: MemoryVisitorDataStore()) }
        try await VisitorDataBackendContract.verify(MemoryVisitorBackend())
    }

    @Test func aChangeLogWrittenBeforeSegmentValuesReadsTheSame() async throws {
        // A line in the earlier format (strings and lists of strings only) reads as those values.
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let line = #"{"d":{"bucketing":{"1":"2"},"goals":[],"locations":[],"segments":{"country":"NL","devices":["desktop"]}},"k":"100-200-old"}"#
        try Data((line + "\n").utf8).write(to: directory.appendingPathComponent("visitors.log"))
        let store = try FileVisitorDataStore(directory: directory)
        await store.prepare()
        let data = store.data(for: VisitorKey(accountId: "100", projectId: "200", visitorId: "old"))
        #expect(data?.segmentValues == ["country": "NL", "devices": ["desktop"]])
        #expect(data?.bucketing == ["1": "2"])
    }
}
