import ConvertModel
import ConvertRules
import ConvertVisitor

/// What the decision engine computes on for one visitor, beside the config: a value, so the
/// engine reads no port and changes nothing.
package struct DecisionInput {
    package let visitorId: String
    package let hashSeed: UInt32
    /// The context's attributes (its visitor properties beneath them).
    package let attributes: [String: JSONValue]
    /// The properties locations and `site_area` rules are matched against.
    package let locationProperties: [String: JSONValue]
    /// The report keys the context was created with (see ``ConvertContext/creationSegments``).
    package let creationSegments: ReportValues?
    /// The visitor's data: stored decisions, segments, locations.
    package var stored: VisitorData

    package init(visitorId: String, hashSeed: UInt32, attributes: [String: JSONValue], locationProperties: [String: JSONValue],
                 creationSegments: ReportValues?, stored: VisitorData) {
        self.visitorId = visitorId
        self.hashSeed = hashSeed
        self.attributes = attributes
        self.locationProperties = locationProperties
        self.creationSegments = creationSegments
        self.stored = stored
    }

    /// Audience data, built as the JavaScript SDK builds it: the visitor's stored segments
    /// deep-merged with the context's attributes (attributes win; arrays are united). The report
    /// keys the context was created with are read from the store alone — they were stored from
    /// these very attributes, maybe merged since with what other calls stored — unless the
    /// context has changed them.
    var audienceData: [String: JSONValue] {
        guard let stored = stored.storedSegmentValues else { return attributes }
        if attributesCover(stored) { return attributes }
        var overlay = attributes
        if let creationSegments {
            creationSegments.forEach { key, value in
                if stored[key] != nil && attributes[key] == value { overlay[key] = nil }
            }
        }
        return JSONValue.deepMerging(stored, overlay)
    }

    /// Whether the merge would give the attributes back: every stored key holds the attribute's
    /// value, and that value merges into itself or is an unchanged creation value.
    private func attributesCover(_ stored: [String: JSONValue]) -> Bool {
        for (key, value) in stored {
            guard let given = attributes.member(key), given == value else { return false }
            if !value.mergesIntoItself && creationSegments?.member(key) != given { return false }
        }
        return true
    }
}
