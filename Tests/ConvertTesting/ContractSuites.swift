import ConvertJSON
import ConvertModel
import ConvertStorage
import ConvertVisitor
import Foundation

/// A broken promise found by a contract suite.
public struct ContractViolation: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

private func require(_ condition: Bool, _ message: @autoclosure () -> String) throws {
    if !condition { throw ContractViolation(message()) }
}

/// Behaviour every ``VisitorDataStore`` adapter must show. Run it from your own tests:
///
/// ```swift
/// try await VisitorDataStoreContract.verify { MyRedisStore(...) }
/// ```
public enum VisitorDataStoreContract {
    /// Checks a fresh store from `make`; `reopen`, when given, must return a store over the same
    /// persisted state (to check durability).
    public static func verify(make: () throws -> any VisitorDataStore,
                              reopen: (() throws -> any VisitorDataStore)? = nil) async throws {
        let store = try make()
        try require(store.data(for: "a-b-v1") == nil, "an unknown key must read as nil")
        let first = store.update("a-b-v1") { data -> Bool in
            data.bucketing["e1"] = "x1"
            return data.goals.insert("g1").inserted
        }
        try require(first, "update must see empty data for a new key")
        let second = store.update("a-b-v1") { $0.goals.insert("g1").inserted }
        try require(!second, "update must see the data stored before")
        try require(store.data(for: "a-b-v1")?.bucketing == ["e1": "x1"], "data must read back")
        store.update("a-b-v2") { $0.segments = VisitorSegments(country: "DE", customSegments: ["s1"]) }
        try require(store.data(for: "a-b-v2")?.segments.customSegments == ["s1"], "segments must read back")
        store.update("a-b-shapes") { $0.segmentValues = SegmentShapes.values }
        try require(store.data(for: "a-b-shapes")?.segmentValues == SegmentShapes.values,
                    "segment values must read back as given: \(store.data(for: "a-b-shapes")?.segmentValues ?? [:])")
        store.update("a-b-v3") { _ in }
        try require(store.data(for: "a-b-v3") == nil, "an update that leaves data empty must not create a record")

        let winners = Counter()
        DispatchQueue.concurrentPerform(iterations: 200) { _ in
            let inserted = store.update("a-b-race") { $0.goals.insert("g").inserted }
            if inserted { winners.increment() }
        }
        try require(winners.value == 1, "concurrent first conversions must have exactly one winner, got \(winners.value)")
        DispatchQueue.concurrentPerform(iterations: 100) { i in
            store.update("a-b-many") { $0.bucketing["e\(i)"] = "v" }
        }
        try require(store.data(for: "a-b-many")?.bucketing.count == 100, "no concurrent update may be lost")
        _ = await store.flush()

        if let reopen {
            let again = try reopen()
            try require(again.data(for: "a-b-v1")?.bucketing == ["e1": "x1"], "decisions must survive reopening")
            try require(again.data(for: "a-b-v1")?.goals == ["g1"], "goal marks must survive reopening")
            try require(again.data(for: "a-b-many")?.bucketing.count == 100, "all updates must survive reopening")
            try require(again.data(for: "a-b-shapes")?.segmentValues == SegmentShapes.values,
                        "segment values must survive reopening as given: \(again.data(for: "a-b-shapes")?.segmentValues ?? [:])")
        }
    }
}

/// Report segment values of every JSON shape a visitor can give, which stores must keep as
/// they are (audiences of a returning visitor read them back).
public enum SegmentShapes {
    /// One report key of each JSON shape: number, empty string, string, nested object, empty
    /// array, `null`, and a list mixing types.
    public static let values: [String: JSONValue] = [
        "country": 1e21, "browser": "", "devices": "s", "source": ["pro": 1, "tags": ["a", 2, nil]],
        "campaign": [], "visitorType": nil, "customSegments": ["8500600,x", 600600, true],
    ]
}

/// Behaviour every ``ByteStore`` adapter must show.
public enum ByteStoreContract {
    /// Runs the checks on a store from `make` (a fresh, empty one); throws at the first behaviour
    /// that differs.
    public static func verify(make: () throws -> any ByteStore) throws {
        let store = try make()
        try require(try store.read("missing") == nil, "a missing blob reads as nil")
        try store.write(Data("one".utf8), to: "blob")
        try require(try store.read("blob") == Data("one".utf8), "a written blob reads back")
        try store.write(Data("two".utf8), to: "blob")
        try require(try store.read("blob") == Data("two".utf8), "a rewrite replaces the blob")
        try store.remove("blob")
        try require(try store.read("blob") == nil, "a removed blob is gone")
        try store.remove("blob")
        let large = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0) })
        try store.write(large, to: "large")
        try require(try store.read("large") == large, "large blobs read back intact")
    }
}

/// Behaviour every ``EventJournal`` adapter must show.
public enum EventJournalContract {
    /// `reopen`, when given, opens a journal over the same persisted state.
    public static func verify(make: () throws -> any EventJournal, reopen: (() throws -> any EventJournal)? = nil) throws {
        let journal = try make()
        try require(try journal.pending().isEmpty, "a new journal is empty")
        let payloads = (0..<20).map { Data("record-\($0) with spaces and \n newline".utf8) }
        let sequences = try payloads.map { try journal.append($0) }
        try require(sequences == sequences.sorted() && Set(sequences).count == 20, "sequences increase")
        try journal.acknowledge(Array(sequences[0..<5]) + [sequences[10]])
        let pending = try journal.pending()
        try require(pending.map(\.sequence) == sequences.enumerated().filter { $0.offset >= 5 && $0.offset != 10 }.map(\.element),
                    "acknowledged records leave, the others keep their order")
        try require(pending.map(\.payload) == payloads.enumerated().filter { $0.offset >= 5 && $0.offset != 10 }.map(\.element),
                    "payloads read back intact")
        try journal.acknowledge([999_999])
        if let reopen {
            let again = try reopen()
            try require(try again.pending().map(\.payload) == pending.map(\.payload), "pending records survive reopening")
            let next = try again.append(Data("after".utf8))
            try require(next > sequences.max()!, "sequences keep increasing after reopening")
            try again.acknowledge(try again.pending().map(\.sequence))
            try require(try again.pending().isEmpty, "acknowledging everything empties the journal")
        }
    }
}

