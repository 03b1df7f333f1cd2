import ConvertJSON

/// Rule sets compiled together for matching on the decision path: the leaves as plain values in
/// one array, their targets' bytes in one buffer, and the keys they read numbered, so matching
/// reads the visitor's values by number from a ``RuleInput`` and retains nothing per rule set or
/// per leaf.
///
/// It answers exactly as ``RuleSet/matches(_:membership:)``: the common forms (a missing value,
/// case-insensitive equality with a string, numeric order with a number) are compiled; any other
/// (other operators, non-string values for equality, text or boolean order targets, rule sets
/// with a mutual-exclusion leaf) is answered by the leaf or the rule set itself.
///
/// ```swift
/// let program = RuleProgram([locationRules, audienceRules])
/// let matched = program.matches(0, program.input(["location": "pricing"]))
/// ```
package final class RuleProgram: Sendable {
    /// One leaf, as plain values.
    private struct Code {
        var op: Op
        var negated: Bool
        /// The leaf's answer when the visitor has no value under its key.
        var whenAbsent: Bool
        /// The key's number in `keys`; -1 when the leaf has no key.
        var key: Int32
        /// The lowered target's bytes in `text`.
        var textStart: Int32
        var textCount: Int32
        /// The numeric target of an order leaf.
        var number: Double
    }

    private enum Op: UInt8 {
        /// Malformed or unknown operator: never holds.
        case never
        /// `equals`, `equalsNumber`, `matches` against a lowered target.
        case lowered
        /// `less` and `lessEqual` against a number.
        case less, lessEqual
        /// Anything else: asks the leaf.
        case general
    }

    /// Where one rule set's shape and leaves start; `shapeStart < 0` for an absent rule set
    /// (never matches) and `-2` for one answered by the rule set itself.
    private struct SetCode {
        var shapeStart: Int32
        var codeStart: Int32
    }

    private let sets: [SetCode]
    /// `[block count, (group count, (leaf count)…)…]` per rule set, one after another.
    private let shape: [Int32]
    private let codes: [Code]
    private let text: [UInt8]
    /// The leaves, parallel to `codes`, for the forms that are not compiled.
    private let leaves: [RuleLeaf]
    /// The rule sets, for those answered whole (a mutual-exclusion leaf decides them).
    private let ruleSets: [RuleSet?]
    /// The keys the leaves read, numbered.
    private let keyNames: [String]
    private let keyBuckets: [Int32]  // key number + 1; 0 = empty
    private let keyHashes: [UInt64]
    private let keyMask: Int

    /// Compiles `groups` of rule sets, numbered one group after another (the first set of the
    /// second group follows the last of the first).
    package init(_ groups: [[RuleSet?]]) {
        var sets: [SetCode] = [], shape: [Int32] = [], codes: [Code] = [], text: [UInt8] = []
        var leaves: [RuleLeaf] = [], ruleSets: [RuleSet?] = []
        var keyNames: [String] = [], keyNumbers: [String: Int32] = [:]
        for ruleSet in groups.joined() {
            ruleSets.append(ruleSet)
            guard let ruleSet else {
                sets.append(SetCode(shapeStart: -1, codeStart: 0))
                continue
            }
            if ruleSet.membershipLeaf != nil {
                sets.append(SetCode(shapeStart: -2, codeStart: 0))
                continue
            }
            let flat = ruleSet.flat
            sets.append(SetCode(shapeStart: Int32(shape.count), codeStart: Int32(codes.count)))
            shape += flat.shape
            for leaf in flat.leaves {
                let s = leaf.storage
                var code = Code(op: .general, negated: s.negated, whenAbsent: false, key: -1, textStart: 0, textCount: 0,
                                number: 0)
                guard s.invalidReason == nil, let matchType = s.matchType else {
                    code.op = .never
                    codes.append(code)
                    leaves.append(leaf)
                    continue
                }
                code.whenAbsent = matchType.judgesPresence && (matchType == .doesNotExist) != s.negated
                if let key = s.key {
                    if let known = keyNumbers[key] {
                        code.key = known
                    } else {
                        code.key = Int32(keyNames.count)
                        keyNumbers[key] = code.key
                        keyNames.append(key)
                    }
                }
                switch matchType {
                case .equals, .equalsNumber, .matches:
                    if let lowered = s.lowered {
                        code.op = .lowered
                        code.textStart = Int32(text.count)
                        text += Array(lowered.utf8)
                        code.textCount = Int32(text.count) - code.textStart
                    }
                case .less, .lessEqual:
                    if case .number(let target)? = s.ordered {
                        code.op = matchType == .less ? .less : .lessEqual
                        code.number = target
                    }
                default:
                    break
                }
                codes.append(code)
                leaves.append(leaf)
            }
        }
        var size = 8
        while size < keyNames.count * 2 { size <<= 1 }
        var buckets = [Int32](repeating: 0, count: size), hashes = [UInt64](repeating: 0, count: size)
        for (number, name) in keyNames.enumerated() {
            let hash = Self.hash(name)
            var bucket = Int(truncatingIfNeeded: hash) & (size - 1)
            while buckets[bucket] != 0 { bucket = (bucket + 1) & (size - 1) }
            buckets[bucket] = Int32(number + 1)
            hashes[bucket] = hash
        }
        self.sets = sets
        self.shape = shape
        self.codes = codes
        self.text = text
        self.leaves = leaves
        self.ruleSets = ruleSets
        self.keyNames = keyNames
        keyBuckets = buckets
        keyHashes = hashes
        keyMask = size - 1
    }

    /// The number of rule sets.
    package var count: Int { sets.count }

    /// Whether rule set `index` is decided by a mutual-exclusion leaf, so matching it asks the
    /// membership resolver.
    package func asksMembership(_ index: Int) -> Bool { sets[index].shapeStart == -2 }

    /// FNV-1a over the key's UTF-8 bytes: keys are short, and this needs no seed or state.
    private static func hash(_ key: String) -> UInt64 {
        var key = key
        return key.withUTF8 { bytes in
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            return hash
        }
    }

    private func keyNumber(_ key: String) -> Int? {
        let hash = Self.hash(key)
        var bucket = Int(truncatingIfNeeded: hash) & keyMask
        while keyBuckets[bucket] != 0 {
            let number = Int(keyBuckets[bucket]) - 1
            if keyHashes[bucket] == hash, keyNames[number] == key { return number }
            bucket = (bucket + 1) & keyMask
        }
        return nil
    }

    /// `data` read against this program's keys.
    package func input(_ data: [String: JSONValue]) -> RuleInput {
        var input = RuleInput(data: data)
        var position = data.startIndex
        while position != data.endIndex {
            if let number = keyNumber(data.keys[position]) { input.append(key: Int32(number), at: position) }
            position = data.index(after: position)
        }
        return input
    }

    /// Whether rule set `index` matches the input; `membership` as for
    /// ``RuleSet/matches(_:membership:)``.
    package func matches(_ index: Int, _ input: borrowing RuleInput, membership: (String) -> Bool? = { _ in nil }) -> Bool {
        let set = sets[index]
        guard set.shapeStart >= 0 else {
            return set.shapeStart == -2 ? ruleSets[index]!.matches(input.data, membership: membership) : false
        }
        return shape.withUnsafeBufferPointer { shape in
            codes.withUnsafeBufferPointer { codes in
                text.withUnsafeBufferPointer { text in run(set, input, shape, codes, text) }
            }
        }
    }

    /// Which of the rule sets at `indexes` match the input, as bits (bit i for `indexes[i]`;
    /// positions past 63 have none), and whether any matched.
    package func matchEach(_ indexes: [Int], _ input: borrowing RuleInput) -> (matched: UInt64, unmatched: UInt64, any: Bool) {
        var matched: UInt64 = 0, unmatched: UInt64 = 0, any = false
        shape.withUnsafeBufferPointer { shape in
            codes.withUnsafeBufferPointer { codes in
                text.withUnsafeBufferPointer { text in
                    for position in indexes.indices {
                        let set = sets[indexes[position]]
                        let holds: Bool
                        if set.shapeStart >= 0 {
                            holds = run(set, input, shape, codes, text)
                        } else {
                            holds = set.shapeStart == -2 ? ruleSets[indexes[position]]!.matches(input.data) : false
                        }
                        let bit: UInt64 = position < 64 ? 1 << UInt64(position) : 0
                        if holds { matched |= bit } else { unmatched |= bit }
                        any = any || holds
                    }
                }
            }
        }
        return (matched, unmatched, any)
    }

    @inline(__always)
    private func run(_ set: SetCode, _ input: borrowing RuleInput, _ shape: UnsafeBufferPointer<Int32>,
                     _ codes: UnsafeBufferPointer<Code>, _ text: UnsafeBufferPointer<UInt8>) -> Bool {
        var at = Int(set.shapeStart), leaf = Int(set.codeStart)
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
                    for l in leaf..<(leaf + leafCount) where holds(codes[l], l, input, text) {
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

    @inline(__always)
    private func holds(_ code: Code, _ index: Int, _ input: borrowing RuleInput, _ text: UnsafeBufferPointer<UInt8>) -> Bool {
        if code.op == .never { return false }
        guard code.key >= 0 else { return code.whenAbsent }
        guard let value = input.value(code.key) else { return code.whenAbsent }
        switch code.op {
        case .lowered:
            guard case .string(let visitor) = value else { break }
            let target = UnsafeBufferPointer(rebasing: text[Int(code.textStart)..<Int(code.textStart + code.textCount)])
            if let equal = RuleInput.asciiLowercasedEquals(visitor, target) { return equal != code.negated }
        case .less, .lessEqual:
            // JavaScript orders values of one `typeof` only: a number, or a string that parses as one.
            let visitor: Double?
            switch value {
            case .number(let number): visitor = number
            case .string(let text): visitor = JavaScriptNumber.parseNumeric(text)
            default: visitor = nil
            }
            guard let visitor, !visitor.isNaN, !code.number.isNaN else { return false }
            return (code.op == .less ? visitor < code.number : visitor <= code.number) != code.negated
        case .never, .general:
            break
        }
        return leaves[index].holds(input.data)
    }
}

/// A visitor's values read against a ``RuleProgram``'s keys: see ``RuleProgram/input(_:)``.
/// It holds the data and, for up to four of its keys (visitor data is that small; more go to
/// an array), the key's number and where the value sits: reading one retains nothing.
package struct RuleInput {
    typealias Position = Dictionary<String, JSONValue>.Index

    private var count = 0
    private var keys: (Int32, Int32, Int32, Int32) = (-1, -1, -1, -1)
    private var positions: (Position?, Position?, Position?, Position?) = (nil, nil, nil, nil)
    private var more: [(key: Int32, position: Position)] = []
    /// The data itself, for the forms the program does not compile.
    let data: [String: JSONValue]

    init(data: [String: JSONValue]) {
        self.data = data
    }

    mutating func append(key: Int32, at position: Position) {
        switch count {
        case 0: (keys.0, positions.0) = (key, position)
        case 1: (keys.1, positions.1) = (key, position)
        case 2: (keys.2, positions.2) = (key, position)
        case 3: (keys.3, positions.3) = (key, position)
        default: more.append((key, position))
        }
        count += 1
    }

    /// The value under key number `key`, `nil` when the visitor has none.
    @inline(__always)
    func value(_ key: Int32) -> JSONValue? {
        let position: Position?
        if keys.0 == key {
            position = positions.0
        } else if keys.1 == key {
            position = positions.1
        } else if keys.2 == key {
            position = positions.2
        } else if keys.3 == key {
            position = positions.3
        } else {
            position = count > 4 ? more.first { $0.key == key }?.position : nil
        }
        return position.map { data.values[$0] }
    }

    /// `lower(a) == target` for ASCII `a`; `nil` when `a` is not ASCII (the leaf decides then).
    static func asciiLowercasedEquals(_ a: String, _ target: UnsafeBufferPointer<UInt8>) -> Bool? {
        var a = a
        return a.withUTF8 { x -> Bool? in
            guard x.count == target.count else {
                for byte in x where byte >= 0x80 { return nil }
                return false
            }
            var equal = true
            for i in 0..<x.count {
                let byte = x[i]
                if byte >= 0x80 { return nil }
                if (byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte) != target[i] { equal = false }
            }
            return equal
        }
    }
}
