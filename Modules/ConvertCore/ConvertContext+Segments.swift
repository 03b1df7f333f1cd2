import ConvertEvents
import ConvertModel
import ConvertRules
import ConvertStorage
import ConvertSupport
import ConvertVisitor

extension ConvertContext {
    /// Sets the visitor's report segments (country, browser, devices, source, campaign,
    /// visitorType, customSegments); keys left `nil` keep their stored value.
    public func setDefaultSegments(_ segments: VisitorSegments) async {
        updateSegments(call: "setDefaultSegments") { $0.merging(segments) }
    }

    /// Sets report segments from a map, keeping only the report keys.
    public func setDefaultSegments(_ values: [String: JSONValue]) async {
        await setDefaultSegments(VisitorSegments(filtering: values))
    }

    /// Adds the custom segments with these keys; with `ruleData`, only those whose rules match it.
    /// - Returns: the ids added (already present ones are skipped).
    @discardableResult
    public func runCustomSegments(_ segmentKeys: [String], ruleData: [String: JSONValue]? = nil) async -> [String] {
        guard let installed = begin("runCustomSegments")?.installed else { return [] }
        var ids: [String] = []
        for key in segmentKeys {
            guard let segment = installed.config.segment(key: key) else {
                core.log.warn("runCustomSegments: no segment has the key \"\(key)\"")
                continue
            }
            if let ruleData, !(segment.rules?.matches(ruleData) ?? false) { continue }
            ids.append(segment.id)
        }
        var added: [String] = []
        updateSegments(call: "runCustomSegments") { segments in
            var current = segments.customSegments ?? []
            for id in ids where !current.contains(id) {
                current.append(id)
                added.append(id)
            }
            var next = segments
            next.customSegments = current
            return next
        }
        return added
    }

    /// The visitor's stored segments.
    public func segments() async -> VisitorSegments {
        guard let installed = core.current(visitorHash) else { return VisitorSegments() }
        return core.ports.visitorStore.data(for: storeKey(installed))?.segments
            ?? VisitorSegments()
    }

    private func updateSegments(call: String, _ change: (VisitorSegments) -> VisitorSegments) {
        guard let (installed, snapshot) = begin(call) else { return }
        guard snapshot.preview == nil else {
            core.log.debug("\(call): previewing, nothing stored")
            return
        }
        let key = storeKey(installed)
        let updated: VisitorSegments? = core.ports.visitorStore.update(key) { data in
            let next = change(data.segments)
            guard next != data.segments else { return nil }
            data.segments = next
            return next
        }
        if let updated {
            core.events.fire(.segments, .segments(SegmentsPayload(visitorId: visitorId, segments: updated)))
        }
    }
}
