extension RuleSet {
    /// The leaves that can never hold, whatever the data: a `match_type` that names no known
    /// operator, or a malformed leaf (``RuleLeaf/invalidReason``). Such a leaf is false even
    /// when negated, as in the JavaScript SDK.
    package var inertLeaves: [RuleLocation] {
        var found: [RuleLocation] = []
        for (b, groups) in blocks.enumerated() {
            for (g, leaves) in groups.enumerated() {
                for (l, leaf) in leaves.enumerated() where leaf.isInert {
                    found.append(RuleLocation(block: b, group: g, leaf: l))
                }
            }
        }
        return found
    }

    /// Whether no data can ever satisfy the rule set because of its inert leaves: every OR
    /// block has an AND group made only of leaves that never hold (or is empty). `false` for a
    /// rule set without leaves and for a mutual-exclusion rule, whose meaning is their own.
    package var canNeverMatch: Bool {
        guard membershipLeaf == nil, !leaves.isEmpty, leaves.contains(where: \.isInert) else { return false }
        return blocks.allSatisfy { groups in
            groups.isEmpty || groups.contains { leaves in leaves.allSatisfy(\.isInert) }
        }
    }
}

extension RuleLeaf {
    /// Whether the leaf can never hold: an unknown operator or a malformed leaf.
    package var isInert: Bool {
        !isExperienceMembership && (invalidReason != nil || matchType == nil)
    }
}
