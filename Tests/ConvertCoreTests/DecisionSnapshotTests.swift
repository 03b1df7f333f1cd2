import ConvertCore
import ConvertEvents
import ConvertMemory
import ConvertModel
import ConvertRules
import ConvertSynchronization
import ConvertTesting
import ConvertTracking
import Foundation
import Testing

/// A config source that only counts how often it is run; it never delivers.
private final class CountingConfigSource: ConfigSource, Sendable {
    private let runs = Locked(0)
    var runCount: Int { runs.value }

    func run(deliver: @escaping @Sendable (ConfigDocument) async -> Void) async throws {
        runs.withValue { $0 += 1 }
    }
}

/// A client SDK made from `snapshot`, on memory stores, a recording sink and a config source
/// that would count a run.
private func client(_ snapshot: DecisionSnapshot, source: CountingConfigSource = CountingConfigSource())
    async throws -> (sdk: ConvertSwiftSDK, sink: RecordingTrackingSink) {
    let sink = RecordingTrackingSink()
    let sdk = ConvertSwiftSDK(snapshot: snapshot, configuration: ConvertConfiguration(sdkKey: ""), ports: ConvertPorts(
        configSource: source, visitorStore: MemoryVisitorDataStore(), visitorIdStore: MemoryVisitorIdStore(),
        trackingSink: sink))
    try await sdk.ready(timeout: .patience)
    return (sdk, sink)
}

private let visitors = ["snap-1", "snap-2", "snap-3", "snap-4", "snap-5", "snap-6"]

@Suite struct DecisionSnapshotTests {
    @Test func theJSONFormRoundTripsByteForByte() async throws {
        let harness = try await started()
        for visitorId in visitors + ["outsider"] {
            let context = visitorId == "outsider" ? harness.sdk.createContext(visitorId: visitorId)
                : qualifyingContext(harness, visitorId)
            let snapshot = try #require(context.snapshot())
            let bytes = try snapshot.jsonData()
            let decoded = try DecisionSnapshot(jsonData: bytes)
            #expect(decoded == snapshot)
            #expect(try decoded.jsonData() == bytes, "encode, decode, encode: the same bytes")
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(text.hasPrefix(#"{"accountId":"10035569","configRevision":""#), "keys sorted")
            #expect(!text.contains("\n") && !text.contains(": ") && !text.contains(", "), "no white space")
            #expect(text.range(of: #""takenAt":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ""#, options: .regularExpression) != nil,
                    "ISO 8601 to the second")
        }
    }

    @Test func aSnapshotHoldsWhatVariationsAndFeaturesGive() async throws {
        let harness = try await started()
        let config = try #require(harness.sdk.config)
        for visitorId in visitors {
            let snapshot = try #require(qualifyingContext(harness, visitorId).snapshot())
            // A second context answers from the stored decisions.
            let context = qualifyingContext(harness, visitorId)
            let variations = context.variations()
            #expect(snapshot.visitorId == visitorId)
            #expect(snapshot.accountId == config.accountId && snapshot.projectId == config.project.id)
            #expect(snapshot.configRevision.count == 16 && snapshot.configRevision.allSatisfy(\.isHexDigit))
            #expect(snapshot.experiences.map(\.experienceKey) == ["test-experience-ab-fullstack-1", "test-experience-ab-fullstack-4"],
                    "config order")
            #expect(snapshot.experiences.map(\.variationId) == variations.map(\.id))
            #expect(snapshot.experiences.map(\.variationKey) == variations.map(\.key))
            #expect(snapshot.experiences.map(\.changes.count) == variations.map(\.changes.count))
            #expect(snapshot.experiences.allSatisfy { $0.isTracked })
            let features = context.features()
            #expect(snapshot.features.map(\.key) == features.map(\.key), "every feature, in config order")
            #expect(snapshot.features.map(\.status) == features.map(\.status))
            #expect(snapshot.features.map(\.variables) == features.map(\.variables))
            #expect(snapshot.features.map(\.variationId) == features.map(\.variationId))
            #expect(harness.sink.events(for: visitorId).count == 2, "taken once, tracked once per experience")
        }
    }

    @Test func anSDKMadeFromASnapshotAnswersAndTracksAsTheServerDecided() async throws {
        let server = try await started()
        let config = try #require(server.sdk.config)
        for visitorId in visitors {
            let snapshot = try #require(qualifyingContext(server, visitorId).snapshot(exposure: .none))
            #expect(snapshot.experiences.allSatisfy { !$0.isTracked })
            let expected = qualifyingContext(server, visitorId)
            let (sdk, sink) = try await client(try DecisionSnapshot(jsonData: try snapshot.jsonData()))
            // No attributes, no location: the snapshot's decisions need none.
            let context = sdk.createContext(visitorId: visitorId)
            let variations = context.variations()
            #expect(variations.map(\.experienceId) == expected.variations().map(\.experienceId))
            #expect(variations.map(\.id) == snapshot.experiences.map(\.variationId))
            #expect(variations.map(\.key) == snapshot.experiences.map(\.variationKey))
            #expect(context.features() == expected.features(), "same features, variables, carriers")
            #expect(context.feature("feature-2").int("button-height") == 40)
            #expect(context.feature("feature-2").json("additionalData") == ["foo": "bar", "v": 2])

            let events = sink.events(for: visitorId)
            #expect(events.map(\.payload) == snapshot.experiences.map {
                TrackingEvent.Payload.bucketing(experienceId: $0.experienceId, variationId: $0.variationId)
            })
            #expect(events.allSatisfy { $0.accountId == config.accountId && $0.projectId == config.project.id })
            _ = sdk.createContext(visitorId: visitorId).variations()
            #expect(sink.events(for: visitorId).count == events.count, "a decision is tracked once")
            #expect(server.sink.events(for: visitorId).isEmpty, "taken with no exposure")

            // Conversions go to the snapshot's goals, with the decisions as their bucketing data.
            let goal = try #require(config.goals.first)
            #expect(snapshot.goals.map(\.key) == config.goals.map(\.key))
            #expect(await context.trackConversion(goal.key) == .tracked(eventCount: 1))
            let conversion = try #require(sink.events(for: visitorId).last)
            let bucketing = Dictionary(uniqueKeysWithValues: snapshot.experiences.map { ($0.experienceId, $0.variationId) })
            #expect(conversion.payload == .conversion(goalId: goal.id, goalData: nil, bucketingData: bucketing))
        }
    }

    @Test func featuresTheSnapshotHasDisabledStayDisabled() async throws {
        let server = try await started()
        var overrides = DecisionOverrides()
        overrides.forceFeature("feature-1", enabled: false)
        overrides.forceFeature("feature-5", enabled: true, variables: ["plans": "none"])
        server.sdk.setOverrides(overrides)
        let snapshot = try #require(qualifyingContext(server, "forced").snapshot(exposure: .none))
        let carrier = try #require(snapshot.experience(key: "test-experience-ab-fullstack-1"))
        #expect(carrier.changes.contains { $0.featureId == "10031" }, "its variation carries feature-1")
        #expect(snapshot.feature(key: "feature-1")?.isEnabled == false)

        let (sdk, _) = try await client(snapshot)
        let context = sdk.createContext(visitorId: "forced")
        #expect(context.feature("feature-1").status == .disabled)
        #expect(context.feature("feature-2").isEnabled)
        let forced = context.feature("feature-5")
        #expect(forced.isEnabled && forced.variables == ["plans": "none"], "forced on there, on here")
        #expect(context.features().map(\.status) == snapshot.features.map(\.status))
    }

    @Test func anSDKMadeFromASnapshotFetchesNothing() async throws {
        let server = try await started()
        let snapshot = try #require(qualifyingContext(server, "offline").snapshot(exposure: .none))
        let source = CountingConfigSource()
        let (sdk, _) = try await client(snapshot, source: source)
        #expect(sdk.config?.experiences.map(\.id) == snapshot.experiences.map(\.experienceId))
        #expect(sdk.config?.degradations == [], "a clean config")
        if case .failed = await sdk.refreshConfig() {} else { Issue.record("a snapshot SDK has nothing to refresh") }
        #expect(source.runCount == 0, "the given config source is never run")
        #expect(sdk.lastConfigFailure == nil)
    }

    @Test func otherVisitorsGetTheSnapshotsAnswersUnderTheirOwnIds() async throws {
        let server = try await started()
        let snapshot = try #require(qualifyingContext(server, "owner").snapshot(exposure: .none))
        let (sdk, sink) = try await client(snapshot)
        let other = sdk.createContext(visitorId: "someone-else")
        #expect(other.variations().map(\.id) == snapshot.experiences.map(\.variationId))
        #expect(sink.events(for: "someone-else").count == snapshot.experiences.count)
    }

    @Test func noSnapshotBeforeAConfigOrForAnUnusableVisitor() async throws {
        let empty = TestSDK(data: nil)
        #expect(empty.sdk.createContext(visitorId: "early").snapshot() == nil)
        let harness = try await started()
        #expect(harness.sdk.createContext(visitorId: " ").snapshot() == nil)
    }

    @Test func decisionsAreMarkedTrackedOnlyWhenTheyAre() async throws {
        let untracked = try await started(networkTracking: false)
        let off = try #require(qualifyingContext(untracked, "t1").snapshot())
        #expect(!off.experiences.isEmpty && off.experiences.allSatisfy { !$0.isTracked })
        let harness = try await started()
        let manual = try #require(qualifyingContext(harness, "t2").snapshot(exposure: .manual))
        #expect(manual.experiences.allSatisfy { !$0.isTracked })
        let denied = qualifyingContext(harness, "t3")
        denied.setConsent(.denied)
        #expect(try #require(denied.snapshot()).experiences.allSatisfy { !$0.isTracked })
    }

    @Test func theRevisionFollowsTheContentNotTheServingTime() throws {
        let data = try Fixtures.data(.cdnConfigBaseline)
        var json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let revision = ConfigRevision.of(bytes: data)
        json["_s_t"] = "2030-01-01 00:00:00Z"
        #expect(ConfigRevision.of(bytes: try JSONSerialization.data(withJSONObject: json)) == revision)
        let wrapped = try JSONSerialization.data(withJSONObject: ["environment": "staging", "data": json])
        #expect(ConfigRevision.of(bytes: wrapped) == revision, "the config inside a wrapper")
        json["archived_experiences"] = ["100334665"]
        #expect(ConfigRevision.of(bytes: try JSONSerialization.data(withJSONObject: json)) != revision)
    }
}

/// Runs `body` on a Dispatch thread, off the cooperative pool: a hook that blocks there cannot
/// starve the tasks it waits for.
private func onDispatchThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(returning: body()) }
    }
}

/// While armed, installs the other of two configs each time the first experience is evaluated,
/// and waits until it is installed.
private final class ConfigSwappingHook: EvaluationHook, Sendable {
    private let source: StubConfigSource
    private let configs: [Data]
    private let state = Locked((armed: false, swaps: 0))

    init(source: StubConfigSource, configs: [Data]) {
        self.source = source
        self.configs = configs
    }

    var stages: EvaluationHookStages { .before }
    var swaps: Int { state.value.swaps }

    func arm(_ armed: Bool) {
        state.withValue { $0.armed = armed }
    }

    func before(_ context: HookContext) throws {
        guard context.flagKind == .experience, context.key == "test-experience-ab-fullstack-1" else { return }
        let next: Data? = state.withValue { state in
            guard state.armed else { return nil }
            state.swaps += 1
            return configs[state.swaps % configs.count]
        }
        guard let next else { return }
        let installed = DispatchSemaphore(value: 0)
        let source = self.source
        Task.detached {
            await source.push(next)
            installed.signal()
        }
        installed.wait()
    }
}

/// A hook of every stage that reads each feature's experiences.
private struct DescribingHook: EvaluationHook {
    func after(_ context: HookContext, details: EvaluationDetails) throws {
        if case .feature(let detail) = details, detail.value.isEnabled {
            #expect(detail.experiences.last?.variant == detail.value.variationKey ?? detail.value.variationId,
                    "\(context.key): described with the carrier that switched it on")
        }
    }
}

/// A config source delivering what the test yields; once the SDK stops it, it keeps nothing of
/// the SDK.
private struct StreamedConfigSource: ConfigSource {
    let configs: AsyncStream<Data>

    func run(deliver: @escaping @Sendable (ConfigDocument) async -> Void) async throws {
        for await bytes in configs { await deliver(ConfigDocument(bytes: bytes, origin: .network)) }
    }
}

/// The baseline with `change` applied to its JSON.
private func baseline(_ change: (inout [String: Any]) throws -> Void) throws -> Data {
    var json = try #require(try JSONSerialization.jsonObject(with: try Fixtures.data(.cdnConfigBaseline)) as? [String: Any])
    try change(&json)
    return try JSONSerialization.data(withJSONObject: json)
}

@Suite struct DecisionSnapshotTrackingTests {
    @Test func aManualDecisionIsTrackedOnlyOnceItsExposureIsSent() async throws {
        let store = MemoryVisitorDataStore()
        let harness = TestSDK(data: try Fixtures.data(.cdnConfigBaseline), store: store)
        try await harness.sdk.ready(timeout: .patience)
        let context = qualifyingContext(harness, "manual")
        let decided = context.variations(exposure: .manual)
        #expect(decided.count == 2)
        let awaiting = try #require(context.snapshot())
        #expect(awaiting.experiences.map(\.experienceId) == decided.map(\.experienceId))
        #expect(awaiting.experiences.allSatisfy { !$0.isTracked }, "no exposure sent yet")
        #expect(harness.sink.events(for: "manual").isEmpty)

        let exposed = decided[0]
        #expect(await context.trackExposure(forExperience: exposed.experienceKey) == .tracked)
        #expect(harness.sink.events(for: "manual").map(\.payload)
                == [.bucketing(experienceId: exposed.experienceId, variationId: exposed.id)])
        let expected = decided.map { $0.experienceId == exposed.experienceId }
        for exposure in [Exposure.automatic, .manual, .none] {
            let taken = try #require(context.snapshot(exposure: exposure))
            #expect(taken.experiences.map(\.isTracked) == expected, "the one exposure sent, taken with \(exposure)")
        }

        // Another instance on the same visitor data reads the exposure as sent.
        let other = TestSDK(data: try Fixtures.data(.cdnConfigBaseline), store: store)
        try await other.sdk.ready(timeout: .patience)
        let elsewhere = try #require(qualifyingContext(other, "manual").snapshot(exposure: .none))
        #expect(elsewhere.experiences.map(\.isTracked) == expected)
        #expect(other.sink.events(for: "manual").isEmpty)
        #expect(harness.sink.events(for: "manual").count == 1, "snapshots sent nothing more")
    }

    @Test func aDecisionMadeWithNoExposureIsNeverReportedTracked() async throws {
        let harness = try await started()
        let context = qualifyingContext(harness, "withheld")
        #expect(context.variations(exposure: .none).count == 2)
        for exposure in [Exposure.automatic, .manual, .none] {
            let taken = try #require(context.snapshot(exposure: exposure))
            #expect(taken.experiences.allSatisfy { !$0.isTracked }, "nothing was sent; taken with \(exposure)")
        }
        #expect(harness.sink.events(for: "withheld").isEmpty)
        // An automatic decision of another visitor still reads as sent.
        let automatic = qualifyingContext(harness, "automatic")
        #expect(automatic.variations().count == 2)
        #expect(try #require(automatic.snapshot()).experiences.allSatisfy(\.isTracked))
    }

    /// With a hook reading features' experiences, features take the carriers' details.
    @Test(arguments: [false, true]) func aSnapshotDecidesEachExperienceOnce(hooked: Bool) async throws {
        // A transient audience is matched again at every decision, and each match is announced.
        let harness = try await started { json in try edit(&json, "audiences", at: 0) { $0["type"] = "transient" } }
        if hooked { harness.sdk.addHook(DescribingHook()) }
        let recorder = await EventRecorder(harness.sdk, events: [.audiences])
        _ = qualifyingContext(harness, "twin").variations()
        _ = try #require(qualifyingContext(harness, "taken").snapshot())
        _ = qualifyingContext(harness, "last").variation(forExperience: "test-experience-ab-fullstack-1")
        func announced(_ visitorId: String) -> Int {
            recorder.payloads(of: .audiences).filter {
                if case .audiences(let payload) = $0 { payload.visitorId == visitorId } else { false }
            }.count
        }
        // Each subscription gets its events in firing order: once the last one is in, all are.
        try await eventually("the last decision's audiences") { announced("last") == 1 }
        #expect(announced("twin") > 0)
        #expect(announced("taken") == announced("twin"), "decided once each, as variations() decides them")
    }

    @Test func aConfigInstalledDuringASnapshotDoesNotMixIntoIt() async throws {
        let original = try Fixtures.data(.cdnConfigBaseline)
        let changed = try baseline { json in
            var experiences = try #require(json["experiences"] as? [[String: Any]])
            let index = try #require(experiences.firstIndex { $0["key"] as? String == "test-experience-ab-fullstack-4" })
            var variations = try #require(experiences[index]["variations"] as? [[String: Any]])
            for position in variations.indices {
                var changes = try #require(variations[position]["changes"] as? [[String: Any]])
                var data = try #require(changes[0]["data"] as? [String: Any])
                var variables = try #require(data["variables_data"] as? [String: Any])
                variables["button-height"] = 41
                data["variables_data"] = variables
                changes[0]["data"] = data
                variations[position]["changes"] = changes
            }
            experiences[index]["variations"] = variations
            json["experiences"] = experiences
        }
        let harness = TestSDK(data: original)
        try await harness.sdk.ready(timeout: .patience)
        let hook = ConfigSwappingHook(source: harness.source, configs: [original, changed])
        harness.sdk.addHook(hook)
        let context = qualifyingContext(harness, "swapped")
        hook.arm(true)
        let snapshot = try #require(await onDispatchThread { context.snapshot(exposure: .none) })
        hook.arm(false)
        #expect(hook.swaps == 1, "the experience was decided once, while another config was installed")
        #expect(ConfigRevision.of(bytes: changed) != ConfigRevision.of(bytes: original))
        #expect(snapshot.configRevision == ConfigRevision.of(bytes: original), "decided on the config installed first")
        #expect(snapshot.feature(key: "feature-2")?.variables["button-height"] == 40, "its features too")
        let carrier = try #require(snapshot.experience(key: "test-experience-ab-fullstack-4"))
        #expect(carrier.changes.first { $0.featureId == "100334" }?.variables["button-height"] == 40)
    }

    @Test func aReplacedConfigIsFreedAndTheLastOneWithItsSDK() async throws {
        let (configs, feed) = AsyncStream.makeStream(of: Data.self)
        defer { feed.finish() }
        var sdk: ConvertSwiftSDK? = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: ""), ports: ConvertPorts(
            configSource: StreamedConfigSource(configs: configs), visitorStore: MemoryVisitorDataStore(),
            visitorIdStore: MemoryVisitorIdStore(), trackingSink: RecordingTrackingSink()))
        feed.yield(try Fixtures.data(.cdnConfigBaseline))
        try await sdk!.ready(timeout: .patience)
        weak let first = sdk!.installedConfigObject
        #expect(first != nil)
        #expect(sdk!.createContext(visitorId: "v", attributes: qualifying).snapshot() != nil)

        let archived = try baseline { $0["archived_experiences"] = ["100346442"] }
        feed.yield(archived)
        try await eventually("the second config installed") { sdk?.config?.isArchived(experienceId: "100346442") == true }
        weak let second = sdk!.installedConfigObject
        let revision = sdk!.createContext(visitorId: "v", attributes: qualifying).snapshot()?.configRevision
        #expect(revision == ConfigRevision.of(bytes: archived))
        // Freed once the tasks that announced the change let go of it (later, on a loaded machine).
        try await eventually("the replaced config freed while its SDK runs") { first == nil }
        #expect(second != nil)
        sdk = nil
        try await eventually("the last config freed with its SDK") { second == nil }
    }
}
