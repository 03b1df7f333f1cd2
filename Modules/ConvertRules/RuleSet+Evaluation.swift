extension RuleSet {
    /// Whether `data` satisfies the rule set.
    ///
    /// - Parameters:
    ///   - data: the visitor's values by key (case-sensitive keys).
    ///   - membership: resolves a mutual-exclusion leaf: whether the visitor is bucketed into the
    ///     experience with this key, `nil` when no such experience exists.
    ///
    /// Equal to `evaluate(data, membership:).matched`, without recording which leaf decided.
    public func matches(_ data: [String: JSONValue], membership: (String) -> Bool? = { _ in nil }) -> Bool {
        let flat = self.flat
        if let location = flat.membershipLeaf, let leaf = self[location] {
            return leaf.evaluateMembership(membership).isMatch
        }
        return flat.shape.withUnsafeBufferPointer { shape in
            flat.leaves.withUnsafeBufferPointer { leaves in
                FlatRules.anyBlockHolds(shape, at: 0, firstLeaf: 0) { leaves[$0].holds(data) }
            }
        }
    }

    /// Evaluates the rule set and reports which leaf decided.
    ///
    /// ```swift
    /// let outcome = rules.evaluate(["age": "30"])
    /// print(outcome.matched, outcome.decidingLeaf as Any, outcome.verdict as Any)
    /// ```
    public func evaluate(_ data: [String: JSONValue], membership: (String) -> Bool? = { _ in nil }) -> RuleOutcome {
        if let location = membershipLeaf, let leaf = self[location] {
            var unresolved: String?
            let verdict = leaf.evaluateMembership { key in
                let bucketed = membership(key)
                if bucketed == nil { unresolved = key }
                return bucketed
            }
            return RuleOutcome(matched: verdict.isMatch, decidingLeaf: location, verdict: verdict,
                               unresolvedExperienceKey: unresolved)
        }
        var last: (RuleLocation, LeafVerdict)?
        // On a miss, an operator the SDK does not know is the likelier cause than the leaf that
        // happened to fail last, so it is the one reported.
        var unknown: (RuleLocation, LeafVerdict)?
        for (b, groups) in blocks.enumerated() {
            guard !groups.isEmpty else { continue }
            var blockHolds = true
            for (g, leaves) in groups.enumerated() {
                var groupHolds = false
                for (l, leaf) in leaves.enumerated() {
                    let verdict = leaf.evaluate(data)
                    last = (RuleLocation(block: b, group: g, leaf: l), verdict)
                    if unknown == nil, case .unknownMatchType = verdict { unknown = last }
                    if verdict.isMatch {
                        groupHolds = true
                        break
                    }
                }
                if !groupHolds {
                    blockHolds = false
                    break
                }
            }
            if blockHolds {
                return RuleOutcome(matched: true, decidingLeaf: last?.0, verdict: last?.1)
            }
        }
        let reported = unknown ?? last
        return RuleOutcome(matched: false, decidingLeaf: reported?.0, verdict: reported?.1)
    }
}

extension RuleLeaf {
    /// Evaluates this leaf alone against `data`.
    package func evaluate(_ data: [String: JSONValue]) -> LeafVerdict {
        if let invalidReason { return .invalidLeaf(invalidReason) }
        guard let matchType else { return .unknownMatchType(matchTypeName ?? "") }
        let found = data.isEmpty ? nil : key.flatMap { data.member($0) }
        guard let visitor = found else {
            if matchType.judgesPresence { return verdict(matchType == .doesNotExist) }
            return data.isEmpty ? .emptyData : .missingKey
        }
        return compare(visitor, matchType)
    }

    /// Whether the leaf holds for `data`: `evaluate(data).isMatch` without building a verdict.
    func holds(_ data: [String: JSONValue]) -> Bool {
        let s = storage
        guard s.invalidReason == nil, let matchType = s.matchType else { return false }
        let found = data.isEmpty ? nil : s.key.flatMap { data.member($0) }
        guard let visitor = found else {
            return matchType.holdsWhenAbsent(negated: s.negated)
        }
        // The common operators on scalar values, without copying the prepared value out.
        switch matchType {
        case .equals, .equalsNumber, .matches:
            guard let target = s.lowered else { break }
            switch visitor {
            case .string(let text): return JavaScriptText.lowercasedEquals(text, target) != s.negated
            case .number, .bool, .null: return JavaScriptText.lowercasedEquals(visitor.javaScriptString, target) != s.negated
            case .array, .object: break
            }
        case .less, .lessEqual:
            guard let target = s.ordered else { break }
            guard let order = PreparedValue.Comparable.order(PreparedValue.Comparable(visitor), target) else { return false }
            return (matchType == .less ? order < 0 : order <= 0) != s.negated
        default:
            break
        }
        return compare(visitor, matchType).isMatch
    }

    /// Evaluates this leaf as a mutual-exclusion leaf against a membership resolver; an
    /// experience key the resolver does not know counts as "not bucketed there".
    package func evaluateMembership(_ membership: (String) -> Bool?) -> LeafVerdict {
        if let invalidReason { return .invalidLeaf(invalidReason) }
        guard case .string(let target)? = value else { return .invalidLeaf("value is not an experience key") }
        return verdict(membership(target) ?? false)
    }

    private static func isPresent(_ value: JSONValue) -> Bool {
        switch value {
        case .null: return false
        case .string(let s): return !s.isEmpty
        default: return true
        }
    }

    private func verdict(_ holds: Bool) -> LeafVerdict {
        holds != negated ? .matched : .notMatched
    }

    /// One case per operator, no `default`: a new ``MatchType`` does not compile until it is
    /// handled here. Inside, a value prepared for another operator fails the leaf.
    private func compare(_ visitor: JSONValue, _ matchType: MatchType) -> LeafVerdict {
        let unsuited = LeafVerdict.invalidLeaf("value does not suit match_type \(matchType.rawValue)")
        switch matchType {
        case .equals, .equalsNumber, .matches:
            guard case .lowered(let t) = prepared else { return unsuited }
            return verdict(equals(visitor, loweredTarget: t))
        case .contains:
            guard case .lowered(let t) = prepared else { return unsuited }
            if JavaScriptText.isBlank(t) { return verdict(true) }
            return verdict(JavaScriptText.contains(JavaScriptText.lowercased(visitor.javaScriptString), t))
        case .startsWith:
            guard case .lowered(let t) = prepared else { return unsuited }
            return verdict(JavaScriptText.lowercased(visitor.javaScriptString).utf8.starts(with: t.utf8))
        case .endsWith:
            guard case .lowered(let t) = prepared else { return unsuited }
            return verdict(JavaScriptText.hasSuffix(JavaScriptText.lowercased(visitor.javaScriptString), t))
        case .less, .lessEqual:
            guard case .ordered(let t) = prepared else { return unsuited }
            guard let order = PreparedValue.Comparable.order(PreparedValue.Comparable(visitor), t) else { return .incomparable }
            return verdict(matchType == .less ? order < 0 : order <= 0)
        case .exists:
            return verdict(Self.isPresent(visitor))
        case .doesNotExist, .notExists:
            return verdict(!Self.isPresent(visitor))
        case .isIn:
            guard case .candidates(let candidates) = prepared else { return unsuited }
            let pieces = visitor.javaScriptString.split(separator: "|", omittingEmptySubsequences: false)
            return verdict(pieces.contains { candidates.contains(String($0)) })
        case .regexMatches:
            guard case .pattern(let regex) = prepared else { return unsuited }
            guard let regex else { return .invalidPattern }
            return verdict(regex.test(JavaScriptText.lowercased(visitor.javaScriptString)))
        }
    }

    private func equals(_ visitor: JSONValue, loweredTarget: String) -> Bool {
        switch visitor {
        case .array(let elements):
            return value.map(elements.contains) ?? false
        case .object(let members) where !members.isEmpty:
            return value.map { members[$0.javaScriptString] != nil } ?? false
        default:
            return JavaScriptText.lowercasedEquals(visitor.javaScriptString, loweredTarget)
        }
    }
}
