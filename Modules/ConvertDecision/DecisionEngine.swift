import ConvertBucketing
import ConvertModel
import ConvertRules
import ConvertVisitor

/// What deciding found, before any side effect.
package struct ExperienceDecision {
    package var reason: DecisionReason
    /// The index of the variation in the experience's variations, `nil` for none (an index,
    /// not the variation: copying a variation writes to its shared reference count).
    package var variationIndex: Int?
    /// True when the variation is new and must be stored and tracked.
    package var isNew = false
    /// Positions in `experience.locationIndexes` whose rules matched / did not match, as bits
    /// (bit i for position i; positions past 63 are not tracked for location events).
    package var matchedLocations: UInt64 = 0
    package var unmatchedLocations: UInt64 = 0
    package var locationsEvaluated = false
    /// Positions in `experience.audienceIndexes` whose rules matched, as bits.
    package var matchedAudiences: UInt64 = 0
    /// Positions in `experience.audienceIndexes` that were checked (not skipped), as bits.
    var checkedAudiences: UInt64 = 0
    var audiencesChecked = false
    /// Mutual-exclusion targets that named no experience.
    package var unresolvedExperienceKeys: [String] = []
}

extension ExperienceDecision {
    /// The variation found in `experience` (the experience decided).
    package func variation(in experience: Experience) -> Variation? { variationIndex.map { experience.variations[$0] } }
}

/// The decision pipeline: archived and environment filters, the stored decision, locations,
/// audiences, segments, bucketing. It reads the config and a ``DecisionInput`` and reports; the
/// caller stores, tracks and announces. The only thing it writes is the call's memo of
/// location answers.
package enum DecisionEngine {
    /// Decides `experience`, at `position` in `installed`, for `input`, keeping no steps; `memo`
    /// keeps the call's location answers for its next decisions.
    package static func decide(_ experience: Experience, at position: Int, in installed: InstalledConfig,
                               for input: borrowing DecisionInput, memo: inout RuleMemo) -> ExperienceDecision {
        var tracer = SilentTracer()
        return decide(experience, at: position, in: installed, for: input, memo: &memo, tracer: &tracer)
    }

    /// Decides `experience` as ``decide(_:at:in:for:memo:)`` does, keeping every check; every
    /// location is matched afresh (no memo is read or kept).
    package static func trace(_ experience: Experience, at position: Int, in installed: InstalledConfig,
                              for input: borrowing DecisionInput) -> (decision: ExperienceDecision, steps: [DecisionStep]) {
        var tracer = RecordingTracer()
        var memo = RuleMemo()
        let decision = decide(experience, at: position, in: installed, for: input, memo: &memo, tracer: &tracer)
        return (decision, tracer.steps)
    }

    // Generic over the tracer so the silent path compiles every step away; specialised here, in
    // this module, for both tracers.
    static func decide<T: DecisionTracer>(_ experience: Experience, at position: Int, in installed: InstalledConfig,
                                          for input: borrowing DecisionInput, memo: inout RuleMemo,
                                          tracer: inout T) -> ExperienceDecision {
        if experience.isArchived {
            tracer.record(.archived)
            return ExperienceDecision(reason: .archived)
        }
        if let env = experience.environment, env != installed.environment {
            tracer.record(.environmentMismatch(experience: env, sdk: installed.environment))
            return ExperienceDecision(reason: .environmentMismatch)
        }
        let storedIndex = installed.storedVariationIndex(at: position, in: input.stored)
        if T.recordsSteps { tracer.record(.storedDecision(variationId: storedIndex.map { experience.variations[$0].id })) }
        var decision = ExperienceDecision(reason: .notBucketed)

        guard locationsPass(experience, installed, input, &decision, memo: &memo, tracer: &tracer) else {
            decision.reason = .locationNotMatched
            return decision
        }
        // Built at most once per decision, for the audiences and the segment gate alike.
        var audienceData: [String: JSONValue]?
        guard audiencesPass(experience, installed, input, bucketed: storedIndex != nil, &decision, &audienceData,
                            tracer: &tracer) else {
            decision.reason = .audienceNotMatched
            return decision
        }
        if !experience.segmentIds.isEmpty {
            let visitorSegments = Self.customSegments(in: audienceData ?? input.audienceData)
            let matched = experience.segmentIds.contains(where: visitorSegments.contains)
            tracer.record(.segments(required: experience.segmentIds, visitor: visitorSegments, matched: matched))
            guard matched else {
                decision.reason = .segmentNotMatched
                return decision
            }
        }
        if let storedIndex {
            decision.reason = .storedDecision
            decision.variationIndex = storedIndex
            return decision
        }
        let value = BucketValue.of(experienceId: experience.id, visitorId: input.visitorId, seed: input.hashSeed)
        let range = experience.bucketTable.rangeIndex(forValue: value)
        if T.recordsSteps {
            tracer.record(.bucket(value: value, ranges: experience.bucketTable.ranges,
                                  variationId: range.map { experience.bucketTable.ranges[$0].variationId }))
        }
        guard let range, experience.rangeVariations[range] >= 0 else { return decision }
        let index = experience.rangeVariations[range]
        decision.reason = .bucketed
        decision.variationIndex = index
        decision.isNew = true
        return decision
    }

    /// The visitor's custom segment ids in audience data: an array's elements, or one id when it
    /// is a single value.
    private static func customSegments(in data: [String: JSONValue]) -> [String] {
        switch data[VisitorSegments.customSegmentsKey] {
        case nil, .null?: return []
        case .array(let ids)?: return ids.map(\.javaScriptString)
        case let id?: return [id.javaScriptString]
        }
    }

    private static func locationsPass<T: DecisionTracer>(_ experience: Experience, _ installed: InstalledConfig,
                                                         _ input: borrowing DecisionInput,
                                                         _ decision: inout ExperienceDecision, memo: inout RuleMemo,
                                                         tracer: inout T) -> Bool {
        if !experience.locationIds.isEmpty {
            let indexes = experience.locationIndexes
            guard !indexes.isEmpty else {
                tracer.record(.noKnownLocation)
                return false
            }
            decision.locationsEvaluated = true
            let properties = input.locationProperties
            var matched: UInt64 = 0, unmatched: UInt64 = 0, anyMatched = false
            if T.recordsSteps {
                for (position, index) in indexes.enumerated() {
                    let location = installed.config.locations[index]
                    let outcome = location.rules?.evaluate(properties)
                        ?? RuleOutcome(matched: false, decidingLeaf: nil, verdict: nil)
                    tracer.record(.location(id: location.id, key: location.key, outcome: outcome))
                    let bit: UInt64 = position < 64 ? 1 << UInt64(position) : 0
                    if outcome.matched { matched |= bit } else { unmatched |= bit }
                    anyMatched = anyMatched || outcome.matched
                }
            } else {
                // Location rules read the location properties alone, so the call's memo keeps
                // each location's answer for the call's other experiences.
                let rules = installed.rules
                (matched, unmatched, anyMatched) = rules.matchEach(indexes, { rules.input(properties) }, memo: &memo)
            }
            decision.matchedLocations |= matched
            decision.unmatchedLocations |= unmatched
            return anyMatched
        }
        if let siteArea = experience.siteArea {
            let outcome = siteArea.evaluate(input.locationProperties)
            tracer.record(.siteArea(outcome: outcome))
            return outcome.matched
        }
        return true
    }

    private static func audiencesPass<T: DecisionTracer>(_ experience: Experience, _ installed: InstalledConfig,
                                                         _ input: borrowing DecisionInput, bucketed: Bool,
                                                         _ decision: inout ExperienceDecision,
                                                         _ audienceData: inout [String: JSONValue]?,
                                                         tracer: inout T) -> Bool {
        guard !experience.audienceIndexes.isEmpty else { return true }
        var checked = 0, matched = 0
        // The audience data read against the rule keys, once for all the experience's audiences.
        var ruleInput: RuleInput?
        for position in experience.audienceIndexes.indices {
            let index = experience.audienceIndexes[position]
            let permanent = installed.audiencePermanent[index]
            if bucketed && permanent {
                if T.recordsSteps {
                    let audience = installed.config.audiences[index]
                    tracer.record(.audience(id: audience.id, key: audience.key, permanent: true, outcome: nil))
                }
                continue
            }
            if audienceData == nil { audienceData = input.audienceData }
            let data = audienceData ?? [:]
            checked += 1
            if position < 64 { decision.checkedAudiences |= 1 << UInt64(position) }
            let audienceMatched: Bool
            let set = installed.audienceRulesStart + index
            if !T.recordsSteps && ruleInput == nil { ruleInput = installed.rules.input(data) }
            if !T.recordsSteps && !installed.rules.asksMembership(set) {
                // No mutual-exclusion leaf: nothing to resolve, so no resolver to build.
                audienceMatched = installed.rules.matches(set, ruleInput!)
            } else {
                audienceMatched = resolvingMembership(index, permanent: permanent, data, ruleInput, installed, input,
                                                      &decision, tracer: &tracer)
            }
            if audienceMatched {
                matched += 1
                if position < 64 { decision.matchedAudiences |= 1 << UInt64(position) }
            }
        }
        guard checked > 0 else { return true }
        decision.audiencesChecked = true
        return experience.audienceMatching == .all ? matched == checked : matched > 0
    }

    /// Whether the audience at `index` matches, its mutual-exclusion leaves answered from the
    /// visitor's stored decisions (a key naming no experience is noted in `decision`); traced
    /// leaf by leaf when the tracer records steps, else matched on `ruleInput` (`data` read
    /// against the rule keys). Apart from the plain path, as the resolver's
    /// captured state costs an allocation.
    private static func resolvingMembership<T: DecisionTracer>(_ index: Int, permanent: Bool, _ data: [String: JSONValue],
                                                               _ ruleInput: RuleInput?,
                                                               _ installed: InstalledConfig,
                                                               _ input: borrowing DecisionInput,
                                                               _ decision: inout ExperienceDecision,
                                                               tracer: inout T) -> Bool {
        var unresolved: String?
        func membership(_ key: String) -> Bool? {
            guard let target = installed.experiencePosition(key: key) else {
                unresolved = key
                return nil
            }
            return input.stored.hasVariation(forExperience: installed.storedExperienceId(at: target))
        }
        let matched: Bool
        if T.recordsSteps {
            let audience = installed.config.audiences[index]
            let outcome = audience.rules?.evaluate(data, membership: membership)
                ?? RuleOutcome(matched: false, decidingLeaf: nil, verdict: nil)
            tracer.record(.audience(id: audience.id, key: audience.key, permanent: permanent, outcome: outcome))
            matched = outcome.matched
        } else {
            matched = installed.rules.matches(installed.audienceRulesStart + index, ruleInput!, membership: membership)
        }
        if let unresolved { decision.unresolvedExperienceKeys.append(unresolved) }
        return matched
    }
}
