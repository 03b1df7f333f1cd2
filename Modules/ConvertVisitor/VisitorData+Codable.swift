import ConvertJSON

extension VisitorData {
    private enum CodingKeys: String, CodingKey {
        case bucketing, goals, exposures, segments, locations, nonFinite
    }

    /// Decodes a record; the numbers listed under `nonFinite` (see ``NonFiniteValues``) are put
    /// back among the segment values.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let goals = try c.decodeIfPresent(Set<String>.self, forKey: .goals) ?? []
        let exposures = try c.decodeIfPresent(Set<String>.self, forKey: .exposures) ?? []
        var segments = try c.decodeIfPresent([String: JSONValue].self, forKey: .segments) ?? [:]
        if let paths = try c.decodeIfPresent([JSONValue].self, forKey: .nonFinite) {
            segments = NonFiniteValues.restoring(paths, in: segments)
        }
        self.init(bucketing: try c.decodeIfPresent([String: String].self, forKey: .bucketing) ?? [:],
                  goals: goals.union(exposures.filter(ExposureMarker.isMarker)),
                  segmentValues: segments,
                  locations: try c.decodeIfPresent(Set<String>.self, forKey: .locations) ?? [])
    }

    /// Encodes a record; NaN and the infinities among segment values, `null` in JSON, are also
    /// listed under `nonFinite` (see ``NonFiniteValues``).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(bucketing, forKey: .bucketing)
        try c.encode(goals, forKey: .goals)
        let exposures = exposureMarkers
        if !exposures.isEmpty { try c.encode(exposures, forKey: .exposures) }
        try c.encode(segmentValues, forKey: .segments)
        try c.encode(locations, forKey: .locations)
        let nonFinite = NonFiniteValues.paths(in: segmentValues)
        if !nonFinite.isEmpty { try c.encode(nonFinite, forKey: .nonFinite) }
    }
}
