import ConvertJSON
import Foundation

/// What the SDK remembers about one visitor.
///
/// A compact value: sticky decisions, converted goals and matched locations are a few interned
/// ids, held in the value itself while they fit (a buffer of their own past that) instead of
/// three hash tables; the dictionary and set views below convert on access.
public struct VisitorData: Sendable, Hashable, Codable {
    // (experience, variation) pairs…, goals…, locations…, each section sorted by interned id so
    // equal data has equal words.
    private var words = RecordWords()
    // Most visitors have no segments: keeping them out of line saves ~90 bytes per visitor.
    private var segmentsBox: SegmentsBox?

    /// Empty data.
    public init() {}

    /// Data with these decisions (experience id → variation id), goals, segments and locations.
    public init(bucketing: [String: String], goals: Set<String> = [], segments: VisitorSegments = VisitorSegments(),
                locations: Set<String> = []) {
        self.bucketing = bucketing
        storedGoals = goals
        self.locations = locations
        self.segments = segments
    }

    /// Data with these decisions, goals, segment values (see ``segmentValues``) and locations.
    public init(bucketing: [String: String], goals: Set<String> = [], segmentValues: [String: JSONValue],
                locations: Set<String> = []) {
        self.bucketing = bucketing
        storedGoals = goals
        self.locations = locations
        self.segmentValues = segmentValues
    }

    /// Sticky decisions: experience id → variation id.
    public var bucketing: [String: String] {
        get {
            var out: [String: String] = [:]
            forEachDecision { out[$0.string] = $1.string }
            return out
        }
        set {
            for experience in decisionExperiences { removeVariation(forExperience: experience) }
            for (experience, variation) in newValue {
                setVariation(InternedId(variation), forExperience: InternedId(experience))
            }
        }
    }

    /// Goal ids already converted (dedup). The SDK's own records of manual exposures are not
    /// goals and are not listed (see ``exposureMarkers``); setting goals keeps them.
    public var goals: Set<String> {
        get { Set(section(1).lazy.map { InternedId(raw: $0).string }.filter { !ExposureMarker.isMarker($0) }) }
        set { replaceSection(1, with: newValue.filter { !ExposureMarker.isMarker($0) }.union(exposureMarkers)) }
    }

    /// The SDK's records of exposures not sent at decision time, at most one per experience: a
    /// decision whose exposure waits for `trackExposure`, an exposure sent by it, or a decision
    /// made with no exposure. Stores persist and share them beside the goals.
    public var exposureMarkers: Set<String> {
        Set(section(1).lazy.map { InternedId(raw: $0).string }.filter(ExposureMarker.isMarker))
    }

    /// Goals and exposure markers together, as stores persist them.
    package var storedGoals: Set<String> {
        get { Set(section(1).map { InternedId(raw: $0).string }) }
        set { replaceSection(1, with: newValue) }
    }

    /// Records `marker` as the experience's one exposure marker, replacing any other marker of
    /// that experience; returns whether it was new.
    @discardableResult
    package mutating func setExposureMarker(_ marker: InternedId, experienceId: String) -> Bool {
        if containsGoal(marker) { return false }
        for other in section(1) {
            let id = InternedId(raw: other)
            if ExposureMarker.experience(of: id.string) == experienceId { _ = remove(id, in: 1) }
        }
        return insert(marker, in: 1)
    }

    /// Keys of the locations the visitor currently matches.
    public var locations: Set<String> {
        get { Set(section(2).map { InternedId(raw: $0).string }) }
        set { replaceSection(2, with: newValue) }
    }

    /// Report segments as the visitor gave them: the report keys (``VisitorSegments/reportKeys``)
    /// with their JSON values unchanged — a number stays a number, a single value is not made a
    /// list, `null` is kept — so a returning visitor's audiences read what its earlier calls
    /// supplied. Setting it keeps only the report keys.
    public var segmentValues: [String: JSONValue] {
        get { segmentsBox?.values ?? [:] }
        set {
            let values = VisitorSegments.reportValues(in: newValue)
            segmentsBox = values.isEmpty ? nil : SegmentsBox.interned(values)
        }
    }

    /// Report segments in their string form, as tracking sends them (see
    /// ``VisitorSegments/init(filtering:)``); setting it stores the strings and string lists.
    public var segments: VisitorSegments {
        get { segmentsBox?.segments ?? VisitorSegments() }
        set { segmentValues = newValue.ruleData }
    }

    /// Takes `other`'s segments as they are stored (their box shared, nothing rebuilt).
    package mutating func adoptSegments(of other: VisitorData) {
        segmentsBox = other.segmentsBox
    }

    /// The string form of the segments, or `nil` when none are stored (without building an
    /// empty value).
    package var storedSegments: VisitorSegments? { segmentsBox?.segments }

    /// The segment values, or `nil` when none are stored.
    package var storedSegmentValues: [String: JSONValue]? { segmentsBox?.values }

    /// The most a visitor's stored segment values may measure (64 KiB): the UTF-8 bytes of their
    /// strings and keys, and a few bytes a number, list or object. Every store writes a
    /// visitor's segments with each change of the visitor (and every tracking event carries
    /// them), so a value that would take them past this is not stored: the other values of the
    /// same call are, and the SDK logs the keys left out.
    public static let maximumSegmentBytes = 65_536

    /// Stores report values over the stored ones as the JavaScript SDK does
    /// (``VisitorSegments/storing(_:over:)``); returns whether anything changed.
    @discardableResult
    package mutating func storeSegmentValues(_ values: [String: JSONValue]) -> Bool {
        var refused: [String] = []
        return storeSegmentValues(values, refused: &refused)
    }

    /// ``storeSegmentValues(_:)``, adding to `refused` the keys left out to keep the segments
    /// within ``maximumSegmentBytes``.
    package mutating func storeSegmentValues(_ values: [String: JSONValue], refused: inout [String]) -> Bool {
        let stored = segmentsBox?.values ?? [:]
        if values.allSatisfy({ VisitorSegments.storesAsIs($0, $1, in: stored) }) { return false }
        return store(merging: values, over: stored, refused: &refused)
    }

    /// Stores `values` merged over `stored` (the values now stored), leaving out the largest new
    /// values while the result is over ``maximumSegmentBytes``; whether that changed them.
    private mutating func store(merging values: [String: JSONValue], over stored: [String: JSONValue],
                                refused: inout [String]) -> Bool {
        var values = values
        var merged = VisitorSegments.storing(values, over: stored)
        while Self.segmentBytes(merged) > Self.maximumSegmentBytes,
              let largest = values.max(by: { Self.segmentBytes($0.value) < Self.segmentBytes($1.value) }) {
            values[largest.key] = nil
            refused.append(largest.key)
            merged = VisitorSegments.storing(values, over: stored)
        }
        guard merged != stored, Self.segmentBytes(merged) <= Self.maximumSegmentBytes else { return false }
        segmentValues = merged
        return true
    }

    private static func segmentBytes(_ values: ReportValues) -> Int {
        var bytes = 2
        values.forEach { key, value in bytes += key.utf8.count + 4 + segmentBytes(value) }
        return bytes
    }

    /// What `values` measure against ``maximumSegmentBytes``.
    package static func segmentBytes(_ values: [String: JSONValue]) -> Int {
        values.reduce(2) { $0 + $1.key.utf8.count + 4 + segmentBytes($1.value) }
    }

    private static func segmentBytes(_ value: JSONValue) -> Int {
        switch value {
        case .string(let text): text.utf8.count + 2
        case .array(let items): items.reduce(2) { $0 + segmentBytes($1) + 1 }
        case .object(let members): segmentBytes(members)
        case .number, .bool, .null: 8
        }
    }

    /// ``storeSegmentValues(_:)`` for report values read in place: a dictionary of them is
    /// built only when they change something.
    @discardableResult
    package mutating func storeSegmentValues(_ values: ReportValues) -> Bool {
        var refused: [String] = []
        return storeSegmentValues(values, refused: &refused)
    }

    /// ``storeSegmentValues(_:)-(ReportValues)``, adding to `refused` the keys left out to keep
    /// the segments within ``maximumSegmentBytes``.
    package mutating func storeSegmentValues(_ values: ReportValues, refused: inout [String]) -> Bool {
        let stored = segmentsBox?.values ?? [:]
        if values.allSatisfy({ VisitorSegments.storesAsIs($0, $1, in: stored) }) { return false }
        if stored.isEmpty, Self.segmentBytes(values) <= Self.maximumSegmentBytes {
            // Stored as given (``VisitorSegments/storing(_:over:)`` over nothing), into a box
            // found without building the dictionary when another visitor just stored the same.
            segmentsBox = SegmentsBox.interned(values)
            return true
        }
        return store(merging: values.dictionary, over: stored, refused: &refused)
    }

    /// The variation id stored for an experience id.
    public func variationId(forExperienceId experienceId: String) -> String? {
        guard let experience = IdPool.shared.existing(experienceId) else { return nil }
        return variation(forExperience: experience)?.string
    }

    /// Whether the goal with this id was already converted.
    public func hasConverted(goalId: String) -> Bool {
        !ExposureMarker.isMarker(goalId) && (IdPool.shared.existing(goalId).map(containsGoal) ?? false)
    }

    /// Whether nothing is remembered.
    public var isEmpty: Bool { words.isEmpty && segmentsBox == nil }

    /// The store key of a visitor: `"{accountId}-{projectId}-{visitorId}"`.
    package static func storeKey(accountId: String, projectId: String, visitorId: String) -> String {
        "\(accountId)-\(projectId)-\(visitorId)"
    }

    // MARK: Interned access (the decision path)

    private func count(_ section: Int) -> Int { words.count(section) }

    /// Where a section starts among the words after the counts.
    private func start(_ section: Int) -> Int {
        switch section {
        case 0: return 0
        case 1: return 2 * count(0)
        default: return 2 * count(0) + count(1)
        }
    }

    private func section(_ section: Int) -> [UInt32] {
        let from = start(section)
        return (from..<(from + count(section))).map { words[$0] }
    }

    package func variation(forExperience experience: InternedId) -> InternedId? {
        var i = 0
        for _ in 0..<count(0) {
            if words[i] == experience.raw { return InternedId(raw: words[i + 1]) }
            i += 2
        }
        return nil
    }

    package func hasVariation(forExperience experience: InternedId) -> Bool {
        variation(forExperience: experience) != nil
    }

    package func forEachDecision(_ body: (InternedId, InternedId) -> Void) {
        var i = 0
        for _ in 0..<count(0) {
            body(InternedId(raw: words[i]), InternedId(raw: words[i + 1]))
            i += 2
        }
    }

    private var decisionExperiences: [InternedId] {
        var out: [InternedId] = []
        forEachDecision { experience, _ in out.append(experience) }
        return out
    }

    package mutating func setVariation(_ variation: InternedId, forExperience experience: InternedId) {
        var i = 0
        let end = 2 * count(0)
        while i < end, words[i] < experience.raw { i += 2 }
        if i < end, words[i] == experience.raw {
            words[i + 1] = variation.raw
            return
        }
        words.insert(experience.raw, variation.raw, at: i, into: 0)
    }

    package mutating func removeVariation(forExperience experience: InternedId) {
        var i = 0
        for _ in 0..<count(0) {
            if words[i] == experience.raw {
                words.remove(at: i, width: 2, from: 0)
                return
            }
            i += 2
        }
    }

    /// Calls `body` with each stored goal, exposure markers included (see ``storedGoals``).
    package func forEachStoredGoal(_ body: (InternedId) -> Void) { forEach(in: 1, body) }

    /// Calls `body` with each location the visitor matches.
    package func forEachLocation(_ body: (InternedId) -> Void) { forEach(in: 2, body) }

    /// Whether `other` matches the same locations (told on the interned ids).
    package func hasSameLocations(as other: VisitorData) -> Bool { sectionEquals(2, other) }

    /// Whether `other` stores the same segment values (its box, or equal values).
    package func hasSameSegments(as other: VisitorData) -> Bool {
        segmentsBox === other.segmentsBox || segmentsBox?.values == other.segmentsBox?.values
    }

    private func sectionEquals(_ section: Int, _ other: VisitorData) -> Bool {
        let count = count(section)
        guard count == other.count(section) else { return false }
        let from = start(section), otherFrom = other.start(section)
        for offset in 0..<count where words[from + offset] != other.words[otherFrom + offset] { return false }
        return true
    }

    private func forEach(in section: Int, _ body: (InternedId) -> Void) {
        let from = start(section)
        for index in from..<(from + count(section)) { body(InternedId(raw: words[index])) }
    }

    package func containsGoal(_ goal: InternedId) -> Bool { contains(goal, in: 1) }
    package func containsLocation(_ location: InternedId) -> Bool { contains(location, in: 2) }
    package var hasLocations: Bool { count(2) > 0 }

    @discardableResult
    package mutating func insertGoal(_ goal: InternedId) -> Bool { insert(goal, in: 1) }
    @discardableResult
    package mutating func removeGoal(_ goal: InternedId) -> Bool { remove(goal, in: 1) }
    @discardableResult
    package mutating func insertLocation(_ location: InternedId) -> Bool { insert(location, in: 2) }
    @discardableResult
    package mutating func removeLocation(_ location: InternedId) -> Bool { remove(location, in: 2) }

    /// Makes room for `extra` more words at once (one allocation for a new visitor's record,
    /// none while it fits inline).
    package mutating func reserve(extra: Int) { words.reserve(extra: extra) }

    private func contains(_ id: InternedId, in section: Int) -> Bool {
        let from = start(section)
        for i in from..<(from + count(section)) where words[i] == id.raw { return true }
        return false
    }

    private mutating func insert(_ id: InternedId, in section: Int) -> Bool {
        let from = start(section), end = from + count(section)
        var i = from
        while i < end, words[i] < id.raw { i += 1 }
        if i < end, words[i] == id.raw { return false }
        words.insert(id.raw, at: i, into: section)
        return true
    }

    private mutating func remove(_ id: InternedId, in section: Int) -> Bool {
        let from = start(section)
        for i in from..<(from + count(section)) where words[i] == id.raw {
            words.remove(at: i, width: 1, from: section)
            return true
        }
        return false
    }

    private mutating func replaceSection(_ section: Int, with values: Set<String>) {
        let from = start(section)
        for _ in 0..<count(section) { words.remove(at: from, width: 1, from: section) }
        for value in values { _ = insert(InternedId(value), in: section) }
    }

    // MARK: Equatable

    public static func == (lhs: VisitorData, rhs: VisitorData) -> Bool {
        lhs.words == rhs.words && lhs.segmentValues == rhs.segmentValues
    }

    public func hash(into hasher: inout Hasher) {
        words.hash(into: &hasher)
        hasher.combine(segmentValues)
    }
}
