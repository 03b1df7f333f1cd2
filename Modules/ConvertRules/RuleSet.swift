/// A rule tree in Convert's shape: `{"OR": [{"AND": [{"OR_WHEN": [leaf, ...]}, ...]}, ...]}`.
///
/// The set matches when any OR block matches; a block matches when all of its AND groups
/// match; a group matches when any of its OR_WHEN leaves matches. An empty or missing array at
/// any level does not match. Decoding never fails: malformed parts become empty blocks or
/// invalid leaves, which evaluate to `false`.
///
/// ```swift
/// let rules = try JSONDecoder().decode(RuleSet.self, from: json)
/// rules.matches(["browser": "FF", "desktop": true])
/// ```
public struct RuleSet: Sendable, Hashable {
    /// The tree, its flat form and its membership leaf in one immutable box: copying a rule
    /// set on the decision path is one retain.
    let flat: FlatRules

    /// The OR blocks, each a list of AND groups, each a list of OR_WHEN leaves.
    package var blocks: [[[RuleLeaf]]] { flat.blocks }
    /// Where the first mutual-exclusion leaf sits, if any; that leaf alone decides the set.
    package var membershipLeaf: RuleLocation? { flat.membershipLeaf }

    /// Builds a rule set from its blocks.
    package init(blocks: [[[RuleLeaf]]]) {
        var found: RuleLocation?
        search: for (b, groups) in blocks.enumerated() {
            for (g, leaves) in groups.enumerated() {
                if let l = leaves.firstIndex(where: \.isExperienceMembership) {
                    found = RuleLocation(block: b, group: g, leaf: l)
                    break search
                }
            }
        }
        flat = FlatRules(blocks, membershipLeaf: found)
    }

    /// Builds a rule set from Convert's rule JSON; never fails.
    public init(json: JSONValue) {
        self.init(reading: json)
    }

    /// Builds a rule set from Convert's rule JSON, read from a parsed document; never fails.
    package init(document: JSONNode) {
        // Not generic itself: a generic would reach other modules unspecialised.
        self.init(reading: document)
    }

    private init<Value: JSONDocumentValue>(reading json: Value) {
        let blocks = Self.elements(of: json, under: "OR").map { block in
            Self.elements(of: block, under: "AND").map { group in
                Self.elements(of: group, under: "OR_WHEN").map { RuleLeaf(reading: $0) }
            }
        }
        self.init(blocks: blocks)
    }

    private static func elements<Value: JSONDocumentValue>(of value: Value, under key: String) -> [Value] {
        guard let elements = value.member(key)?.arrayElements else { return [] }
        return Array(elements)
    }

    /// Every leaf in evaluation order.
    public var leaves: [RuleLeaf] { blocks.flatMap { $0.flatMap { $0 } } }

    /// The leaf at `location`, if there is one.
    package subscript(location: RuleLocation) -> RuleLeaf? {
        guard blocks.indices.contains(location.block),
              blocks[location.block].indices.contains(location.group),
              blocks[location.block][location.group].indices.contains(location.leaf)
        else { return nil }
        return blocks[location.block][location.group][location.leaf]
    }

    /// The rule set as Convert's rule JSON.
    public var json: JSONValue {
        .object(["OR": .array(blocks.map { groups in
            .object(["AND": .array(groups.map { leaves in
                .object(["OR_WHEN": .array(leaves.map(\.json))])
            })])
        })])
    }
}

extension RuleSet {
    public static func == (lhs: RuleSet, rhs: RuleSet) -> Bool {
        lhs.flat === rhs.flat || (lhs.blocks == rhs.blocks && lhs.membershipLeaf == rhs.membershipLeaf)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(blocks)
    }
}

/// A rule tree flattened: the leaves in order, and its shape as
/// `[block count, (group count, (leaf count)…)…]`.
final class FlatRules: Sendable {
    let blocks: [[[RuleLeaf]]]
    let membershipLeaf: RuleLocation?
    let leaves: [RuleLeaf]
    let shape: [Int32]

    init(_ blocks: [[[RuleLeaf]]], membershipLeaf: RuleLocation?) {
        self.blocks = blocks
        self.membershipLeaf = membershipLeaf
        var shape: [Int32] = [Int32(blocks.count)]
        for groups in blocks {
            shape.append(Int32(groups.count))
            for leaves in groups { shape.append(Int32(leaves.count)) }
        }
        self.shape = shape
        leaves = blocks.flatMap { $0.flatMap { $0 } }
    }

    /// Whether any OR block of the rule set whose shape starts at `start` holds: all its AND
    /// groups hold, each by one of its leaves (numbered from `firstLeaf`, asked in order and
    /// no further than needed). An empty block or group holds nothing.
    @inline(__always)
    static func anyBlockHolds(_ shape: UnsafeBufferPointer<Int32>, at start: Int, firstLeaf: Int,
                              _ holds: (Int) -> Bool) -> Bool {
        var at = start, leaf = firstLeaf
        let blocks = Int(shape[at])
        at += 1
        for _ in 0..<blocks {
            let groupCount = Int(shape[at])
            at += 1
            var blockHolds = groupCount > 0
            for _ in 0..<groupCount {
                let leafCount = Int(shape[at])
                at += 1
                if blockHolds {
                    var groupHolds = false
                    for l in leaf..<(leaf + leafCount) where holds(l) {
                        groupHolds = true
                        break
                    }
                    blockHolds = groupHolds
                }
                leaf += leafCount
            }
            if blockHolds { return true }
        }
        return false
    }
}

extension RuleSet: Codable {
    public init(from decoder: any Decoder) throws {
        self.init(json: try JSONValue(from: decoder))
    }

    public func encode(to encoder: any Encoder) throws {
        try json.encode(to: encoder)
    }
}

/// The position of a leaf in a ``RuleSet``: OR block, AND group, OR_WHEN leaf (all zero-based).
public struct RuleLocation: Sendable, Hashable, CustomStringConvertible {
    /// The OR block's index (zero-based).
    public let block: Int
    /// The AND group's index within its block (zero-based).
    public let group: Int
    /// The OR_WHEN leaf's index within its group (zero-based).
    public let leaf: Int

    /// The location of one leaf.
    package init(block: Int, group: Int, leaf: Int) {
        self.block = block
        self.group = group
        self.leaf = leaf
    }

    public var description: String { "OR[\(block)].AND[\(group)].OR_WHEN[\(leaf)]" }
}
