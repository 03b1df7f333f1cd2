import ConvertEnvironment
import ConvertEvents
import ConvertModel
import ConvertRules
import ConvertStorage
import ConvertVisitor

extension SDKRuntime {
    /// Logs the segment keys a store left out to keep a visitor's segments within their bound.
    func logRefusedSegments(_ keys: [String]) {
        guard !keys.isEmpty else { return }
        log.warn("segments not stored (\(keys.sorted().joined(separator: ", "))): "
                 + "a visitor's segment values are limited to \(VisitorData.maximumSegmentBytes) bytes")
    }
}

extension ConvertContext {
    /// Sets the visitor's report segments (country, browser, devices, source, campaign,
    /// visitorType, customSegments); keys left `nil` keep their stored value, lists are united
    /// with the stored ones.
    public func setDefaultSegments(_ segments: VisitorSegments) async {
        guard let call = begin("setDefaultSegments") else { return }
        updateSegments(call) { _ in segments.ruleData }
    }

    /// ``setDefaultSegments(_:)-(VisitorSegments)`` with a completion handler.
    public func setDefaultSegments(_ segments: VisitorSegments, completion: @escaping @Sendable () -> Void) {
        Task {
            await setDefaultSegments(segments)
            completion()
        }
    }

    /// Sets report segments from a map, keeping only the report keys, each with its value as
    /// given (audiences read it back unchanged; tracking sends its string form).
    public func setDefaultSegments(_ values: [String: JSONValue]) async {
        let values = VisitorSegments.reportValues(in: values)
        guard let call = begin("setDefaultSegments") else { return }
        updateSegments(call) { _ in values }
    }

    /// Adds the custom segments with these keys; with `ruleData`, only those whose rules match it.
    /// - Returns: the ids added (already present ones are skipped).
    @discardableResult
    public func runCustomSegments(_ segmentKeys: [String], ruleData: [String: JSONValue]? = nil) async -> [String] {
        guard let call = begin("runCustomSegments") else { return [] }
        var ids: [String] = []
        for key in segmentKeys {
            guard let segment = call.config.segment(key: key) else {
                runtime.log.warn("runCustomSegments: no segment has the key \"\(key)\"")
                continue
            }
            if let ruleData, !(segment.rules?.matches(ruleData) ?? false) { continue }
            ids.append(segment.id)
        }
        var added: [String] = []
        updateSegments(call) { stored in
            // The stored ids as given (a single id counts as one), compared by their string form.
            let current: [JSONValue]
            switch stored[VisitorSegments.customSegmentsKey] {
            case nil, .null?: current = []
            case .array(let elements)?: current = elements
            case let single?: current = [single]
            }
            var known = Set(current.map(\.javaScriptString))
            added = ids.filter { known.insert($0).inserted }
            guard !added.isEmpty else { return [:] }
            return [VisitorSegments.customSegmentsKey: .array(current + added.map(JSONValue.string))]
        }
        return added
    }

    /// ``runCustomSegments(_:ruleData:)`` with a completion handler.
    public func runCustomSegments(_ segmentKeys: [String], ruleData: [String: JSONValue]? = nil,
                                  completion: @escaping @Sendable ([String]) -> Void) {
        Task { completion(await runCustomSegments(segmentKeys, ruleData: ruleData)) }
    }

    /// The visitor's stored segments, in their string form.
    public func segments() -> VisitorSegments {
        visitorData().segments
    }

    /// The visitor's stored segments with their values as given (what audiences read).
    public func segmentValues() -> [String: JSONValue] {
        visitorData().segmentValues
    }

    /// Stores the report values `change` makes of the stored ones over them; announces the
    /// segments when that changed them.
    private func updateSegments(_ call: Decider, _ change: ([String: JSONValue]) -> [String: JSONValue]) {
        guard call.records else {
            runtime.log.debug("segments: \(call.preview == nil ? "no consent" : "previewing"), nothing stored")
            return
        }
        var refused: [String] = []
        let updated: VisitorSegments? = runtime.ports.visitorStore.update(call.key) { data in
            refused = []
            let values = change(data.segmentValues)
            guard !values.isEmpty, data.storeSegmentValues(values, refused: &refused) else { return nil }
            return data.segments
        }
        runtime.logRefusedSegments(refused)
        if let updated {
            runtime.events.publish(.segments, .segments(SegmentsPayload(visitorId: visitorId, segments: updated)))
        }
    }
}
