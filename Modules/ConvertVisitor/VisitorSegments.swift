import ConvertJSON

/// The visitor's report segments: the seven keys tracking sends and audiences can read.
///
/// ```swift
/// await context.setDefaultSegments(VisitorSegments(country: "US", browser: "FF"))
/// ```
public struct VisitorSegments: Sendable, Hashable, Codable {
    /// The visitor's country (e.g. `"US"`); `nil` when unknown.
    public var country: String?
    /// The visitor's browser (e.g. `"FF"`, `"CH"`); `nil` when unknown.
    public var browser: String?
    /// The visitor's device classes (e.g. `["desktop"]`); `nil` when unknown.
    public var devices: [String]?
    /// Where the visitor came from (e.g. `"campaign"`, `"search"`); `nil` when unknown.
    public var source: String?
    /// The campaign that brought the visitor; `nil` when none.
    public var campaign: String?
    /// `"new"` or `"returning"`, as your app judges it; `nil` when unknown.
    public var visitorType: String?
    /// Ids of the custom segments the visitor belongs to.
    public var customSegments: [String]?

    /// Segments with the given keys; the others stay `nil`.
    public init(country: String? = nil, browser: String? = nil, devices: [String]? = nil, source: String? = nil,
                campaign: String? = nil, visitorType: String? = nil, customSegments: [String]? = nil) {
        self.country = country
        self.browser = browser
        self.devices = devices
        self.source = source
        self.campaign = campaign
        self.visitorType = visitorType
        self.customSegments = customSegments
    }

    /// The report key that holds custom segment ids.
    package static let customSegmentsKey = "customSegments"

    /// The report keys, in wire order.
    public static let reportKeys = ["country", "browser", "devices", "source", "campaign", "visitorType", "customSegments"]

    /// The string form of the report keys of `values`, as tracking sends them: text keys take
    /// the value's JavaScript string form, list keys its elements' (a single value becomes a
    /// one-element list); `null` values are left out.
    public init(filtering values: [String: JSONValue]) {
        self.init()
        // One pass over the (few) attributes instead of seven hashed lookups.
        for (key, value) in values where !value.isNull {
            switch key {
            case "country": country = value.javaScriptString
            case "browser": browser = value.javaScriptString
            case "devices": devices = Self.list(value)
            case "source": source = value.javaScriptString
            case "campaign": campaign = value.javaScriptString
            case "visitorType": visitorType = value.javaScriptString
            case "customSegments": customSegments = Self.list(value)
            default: break
            }
        }
    }

    private static func list(_ value: JSONValue) -> [String] {
        if case .array(let items) = value { return items.map(\.javaScriptString) }
        return [value.javaScriptString]
    }

    /// The report keys of `values` with their values as given, `null` included: what the SDK
    /// stores as the visitor's segments, so that a returning visitor's rules read exactly what an
    /// earlier call supplied (see ``VisitorData/segmentValues``).
    package static func reportValues(in values: [String: JSONValue]) -> [String: JSONValue] {
        var count = 0
        for key in values.keys where isReportKey(key) { count += 1 }
        if count == 0 { return [:] }
        if count == values.count { return values }
        var out = [String: JSONValue](minimumCapacity: count)
        for (key, value) in values where isReportKey(key) { out[key] = value }
        return out
    }

    /// Whether `key` is one of ``reportKeys``; the length rules most keys out before any compare.
    @inline(__always)
    static func isReportKey(_ key: String) -> Bool {
        switch key.utf8.count {
        case 6: return key == "source"
        case 7: return key == "country" || key == "browser" || key == "devices"
        case 8: return key == "campaign"
        case 11: return key == "visitorType"
        case 14: return key == "customSegments"
        default: return false
        }
    }

    /// Stored segment values with `new` stored over them, as the JavaScript SDK stores segments:
    /// two arrays are united (the new elements first, repeated scalars once), two objects merged
    /// member by member, and any other new value (`null` included) replaces the stored one. One
    /// deliberate difference: a stored single `customSegments` id followed by a list of ids is
    /// united with the list rather than replaced by it.
    package static func storing(_ new: [String: JSONValue], over stored: [String: JSONValue]) -> [String: JSONValue] {
        guard !stored.isEmpty else { return new }
        var overlay = new
        if case .array(let ids)? = new[customSegmentsKey], let old = stored[customSegmentsKey], old.isSingleId {
            let united = JSONValue.deepMerging([customSegmentsKey: .array([old])], [customSegmentsKey: .array(ids)])
            overlay[customSegmentsKey] = united[customSegmentsKey]
        }
        return JSONValue.deepMerging(stored, overlay)
    }

    /// Whether storing `new` over `stored` would leave `stored` as it is; decided without
    /// building the merged values in the usual case of a visitor giving the same values again.
    package static func storingChangesNothing(_ new: [String: JSONValue], over stored: [String: JSONValue]) -> Bool {
        // Past the first check with nothing stored, the new values themselves are the change.
        new.allSatisfy { storesAsIs($0, $1, in: stored) } || (!stored.isEmpty && storing(new, over: stored) == stored)
    }

    /// Whether storing `value` under `key` over `stored` leaves it as it is, known without
    /// merging: the same value is stored, and it merges into itself.
    package static func storesAsIs(_ key: String, _ value: JSONValue, in stored: [String: JSONValue]) -> Bool {
        stored.member(key) == value && value.mergesIntoItself
    }

    /// Whether no key is set.
    public var isEmpty: Bool {
        country == nil && browser == nil && devices == nil && source == nil && campaign == nil && visitorType == nil
            && customSegments == nil
    }

    /// The set keys as rule data, so audiences can match on segments.
    public var ruleData: [String: JSONValue] {
        var out: [String: JSONValue] = [:]
        if let country { out["country"] = .string(country) }
        if let browser { out["browser"] = .string(browser) }
        if let devices { out["devices"] = .array(devices.map(JSONValue.string)) }
        if let source { out["source"] = .string(source) }
        if let campaign { out["campaign"] = .string(campaign) }
        if let visitorType { out["visitorType"] = .string(visitorType) }
        if let customSegments { out["customSegments"] = .array(customSegments.map(JSONValue.string)) }
        return out
    }
}

/// ``VisitorSegments``, under the shorter name app code often uses.
public typealias Segments = VisitorSegments

extension JSONValue {
    /// A value the store treats as one `customSegments` id: neither a list, an object nor `null`.
    fileprivate var isSingleId: Bool {
        switch self {
        case .array, .object, .null: return false
        default: return true
        }
    }

    /// Whether deep-merging the value with an equal copy of itself gives it back: not so for an
    /// array holding a repeated scalar, an array or an object (a JavaScript union keeps every
    /// array and object it meets).
    package var mergesIntoItself: Bool {
        switch self {
        case .array(let elements):
            var seen = Set<JSONValue>()
            for element in elements {
                switch element {
                case .array, .object: return false
                default: if !seen.insert(element).inserted { return false }
                }
            }
            return true
        case .object(let members): return members.values.allSatisfy(\.mergesIntoItself)
        default: return true
        }
    }
}

/// The report keys of a set of attributes, read in place: what
/// ``VisitorSegments/reportValues(in:)`` gives, without building a dictionary for it (a context
/// keeps them from its creation attributes; most visitors store them unchanged).
package struct ReportValues: Sendable {
    /// The attributes the report keys are read from (other keys included).
    package let attributes: [String: JSONValue]

    /// The report values of `attributes`; `nil` when there are none.
    package init?(of attributes: [String: JSONValue]) {
        guard attributes.keys.contains(where: VisitorSegments.isReportKey) else { return nil }
        self.attributes = attributes
    }

    /// The value of report key `key`; `nil` for a key that is not one, or is not given.
    package func member(_ key: String) -> JSONValue? {
        VisitorSegments.isReportKey(key) ? attributes.member(key) : nil
    }

    /// Calls `body` with each report key and its value, in no particular order.
    package func forEach(_ body: (String, JSONValue) throws -> Void) rethrows {
        for (key, value) in attributes where VisitorSegments.isReportKey(key) { try body(key, value) }
    }

    /// Whether `body` holds for every report key and its value.
    package func allSatisfy(_ body: (String, JSONValue) throws -> Bool) rethrows -> Bool {
        for (key, value) in attributes where VisitorSegments.isReportKey(key) { guard try body(key, value) else { return false } }
        return true
    }

    /// The report values as a dictionary.
    package var dictionary: [String: JSONValue] { VisitorSegments.reportValues(in: attributes) }

    /// Whether ``dictionary`` would equal `values`, told without building it.
    package func equals(_ values: [String: JSONValue]) -> Bool {
        var count = 0
        for (key, value) in attributes where VisitorSegments.isReportKey(key) {
            guard values.member(key) == value else { return false }
            count += 1
        }
        return count == values.count
    }
}
