import ConvertJSON

/// Rule sets compiled together for matching on the decision path: the leaves as plain values in
/// one buffer, their lowered targets' bytes in another, and the keys they read numbered, so
/// matching reads the visitor's values by number from a ``RuleInput`` and retains nothing per
/// rule set or per leaf.
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
        /// The lowered target: `targetCount` bytes at `targetStart` in the target bytes.
        var targetStart: Int32
        var targetCount: Int32
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

    /// The compiled program, read in place by matching.
    private let buffers: Buffers
    /// The leaves, parallel to `codes`, for the forms that are not compiled.
    private let leaves: [RuleLeaf]
    /// The rule sets, for those answered whole (a mutual-exclusion leaf decides them).
    private let ruleSets: [RuleSet?]
    /// The keys the leaves read, numbered.
    private let keys: KeyIndex<FNV1a>

    /// Compiles `groups` of rule sets, numbered one group after another (the first set of the
    /// second group follows the last of the first).
    package init(_ groups: [[RuleSet?]]) {
        var sets: [SetCode] = [], shape: [Int32] = [], codes: [Code] = [], targetBytes: [UInt8] = []
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
                var code = Code(op: .general, negated: s.negated, whenAbsent: false, key: -1, targetStart: 0, targetCount: 0,
                                number: 0)
                guard s.invalidReason == nil, let matchType = s.matchType else {
                    code.op = .never
                    codes.append(code)
                    leaves.append(leaf)
                    continue
                }
                code.whenAbsent = matchType.holdsWhenAbsent(negated: s.negated)
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
                        code.targetStart = Int32(targetBytes.count)
                        code.targetCount = Int32(lowered.utf8.count)
                        targetBytes += lowered.utf8
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
        buffers = Buffers(sets: sets, shape: shape, codes: codes, targetBytes: targetBytes)
        self.leaves = leaves
        self.ruleSets = ruleSets
        keys = KeyIndex(keyNames)
    }

    /// The number of rule sets.
    package var count: Int { buffers.sets.count }

    /// Whether rule set `index` is decided by a mutual-exclusion leaf, so matching it asks the
    /// membership resolver.
    package func asksMembership(_ index: Int) -> Bool {
        precondition(buffers.sets.indices.contains(index), "no rule set \(index)")
        return buffers.sets[index].shapeStart == -2
    }

    /// `data` read against this program's keys.
    package func input(_ data: [String: JSONValue]) -> RuleInput {
        var input = RuleInput(data: data)
        for (key, value) in data {
            if let number = keys.position(of: key) { input.append(key: Int32(number), value) }
        }
        return input
    }

    /// Whether rule set `index` matches the input; `membership` as for
    /// ``RuleSet/matches(_:membership:)``.
    package func matches(_ index: Int, _ input: borrowing RuleInput, membership: (String) -> Bool? = { _ in nil }) -> Bool {
        // The buffers are not bounds-checked: a bad index traps here instead.
        precondition(buffers.sets.indices.contains(index), "no rule set \(index)")
        return answer(index, input, membership)
    }

    /// Which of the rule sets at `indexes` match the input, as bits (bit i for `indexes[i]`;
    /// positions past 63 have none), and whether any matched. Answers are remembered in `memo`
    /// and reused from it; `input` is asked for only when some set has no remembered answer.
    package func matchEach(_ indexes: [Int], _ input: () -> RuleInput, memo: inout RuleMemo)
        -> (matched: UInt64, unmatched: UInt64, any: Bool) {
        var matched: UInt64 = 0, unmatched: UInt64 = 0, any = false
        func note(_ position: Int, _ holds: Bool) {
            let bit: UInt64 = position < 64 ? 1 << UInt64(position) : 0
            if holds { matched |= bit } else { unmatched |= bit }
            any = any || holds
        }
        if indexes.allSatisfy({ memo.answer($0) != nil }) {
            for position in indexes.indices { note(position, memo.answer(indexes[position]) == true) }
            return (matched, unmatched, any)
        }
        let read = input()
        for position in indexes.indices {
            let index = indexes[position]
            precondition(buffers.sets.indices.contains(index), "no rule set \(index)")
            let holds = memo.answer(index) ?? answer(index, read) { _ in nil }
            memo.remember(index, holds)
            note(position, holds)
        }
        return (matched, unmatched, any)
    }

    @inline(__always)
    private func answer(_ index: Int, _ input: borrowing RuleInput, _ membership: (String) -> Bool?) -> Bool {
        let set = buffers.sets[index]
        guard set.shapeStart >= 0 else {
            return set.shapeStart == -2 ? ruleSets[index]!.matches(input.data, membership: membership) : false
        }
        let codes = buffers.codes
        return FlatRules.anyBlockHolds(buffers.shape, at: Int(set.shapeStart), firstLeaf: Int(set.codeStart)) {
            holds(codes[$0], $0, input)
        }
    }

    /// The leaf's answer as ``RuleLeaf``'s own fast path gives it, from the same primitives.
    @inline(__always)
    private func holds(_ code: Code, _ index: Int, _ input: borrowing RuleInput) -> Bool {
        if code.op == .never { return false }
        guard code.key >= 0 else { return code.whenAbsent }
        // `nil`: a form the program does not compile, answered by the leaf itself.
        let compiled: Bool? = input.withValue(code.key, absent: code.whenAbsent) { value in
            switch code.op {
            case .lowered:
                if case .string(let text) = value {
                    let start = Int(code.targetStart)
                    let target = UnsafeBufferPointer(rebasing: buffers.targetBytes[start..<start + Int(code.targetCount)])
                    return JavaScriptText.lowercasedEquals(text, loweredBytes: target) != code.negated
                }
            case .less, .lessEqual:
                guard let order = PreparedValue.Comparable.order(PreparedValue.Comparable(value), .number(code.number))
                else { return false }
                return (code.op == .less ? order < 0 : order <= 0) != code.negated
            case .never, .general:
                break
            }
            return nil
        }
        return compiled ?? leaves[index].holds(input.data)
    }
}

extension RuleProgram {
    /// The compiled program in memory of its own, copied in once by `init` and freed by `deinit`:
    /// matching reads it in place, where reading an array property retains its buffer at every use.
    private final class Buffers: @unchecked Sendable {  // memory it owns, written in init, freed in deinit, only read between
        let sets: UnsafeBufferPointer<SetCode>
        /// `[block count, (group count, (leaf count)…)…]` per rule set, one after another.
        let shape: UnsafeBufferPointer<Int32>
        let codes: UnsafeBufferPointer<Code>
        /// Every lowered target's UTF-8 bytes, one after another.
        let targetBytes: UnsafeBufferPointer<UInt8>

        init(sets: [SetCode], shape: [Int32], codes: [Code], targetBytes: [UInt8]) {
            self.sets = Self.copy(sets)
            self.shape = Self.copy(shape)
            self.codes = Self.copy(codes)
            self.targetBytes = Self.copy(targetBytes)
        }

        deinit {
            sets.deallocate()
            shape.deallocate()
            codes.deallocate()
            targetBytes.deallocate()
        }

        /// `elements` copied into memory of their own (plain values: nothing to deinitialise).
        private static func copy<Element: BitwiseCopyable>(_ elements: [Element]) -> UnsafeBufferPointer<Element> {
            let buffer = UnsafeMutableBufferPointer<Element>.allocate(capacity: max(1, elements.count))
            _ = buffer.initialize(from: elements)
            return UnsafeBufferPointer(rebasing: buffer[0..<elements.count])
        }
    }
}

/// The answers of a ``RuleProgram``'s first 64 rule sets for one input, as far as they were
/// asked: a call deciding several experiences matches each location once. A memo belongs to one
/// program and one input (it records neither): keep it no longer than both.
package struct RuleMemo {
    private var known: UInt64 = 0
    private var holds: UInt64 = 0

    /// No answers yet.
    package init() {}

    /// The remembered answer of rule set `index`, if any.
    @inline(__always)
    package func answer(_ index: Int) -> Bool? {
        guard index < 64, known & (1 << UInt64(index)) != 0 else { return nil }
        return holds & (1 << UInt64(index)) != 0
    }

    /// Remembers rule set `index`'s answer (sets past 63 are not remembered).
    @inline(__always)
    package mutating func remember(_ index: Int, _ answer: Bool) {
        guard index < 64 else { return }
        known |= 1 << UInt64(index)
        if answer { holds |= 1 << UInt64(index) }
    }
}

/// A visitor's values read against a ``RuleProgram``'s keys: see ``RuleProgram/input(_:)``.
/// It holds the data and, for up to four of its keys (visitor data is that small; more go to
/// an array), the key's number and its value, so leaves read values without a dictionary lookup.
package struct RuleInput {
    private var count = 0
    private var keys: (Int32, Int32, Int32, Int32) = (-1, -1, -1, -1)
    // The values themselves, read once here: reading a dictionary entry at a leaf would copy
    // (retain and release) it at every leaf that reads it.
    private var values: (JSONValue, JSONValue, JSONValue, JSONValue) = (.null, .null, .null, .null)
    private var more: [(key: Int32, value: JSONValue)] = []
    /// The data itself, for the forms the program does not compile.
    let data: [String: JSONValue]

    init(data: [String: JSONValue]) {
        self.data = data
    }

    mutating func append(key: Int32, _ value: JSONValue) {
        switch count {
        case 0: (keys.0, values.0) = (key, value)
        case 1: (keys.1, values.1) = (key, value)
        case 2: (keys.2, values.2) = (key, value)
        case 3: (keys.3, values.3) = (key, value)
        default: more.append((key, value))
        }
        count += 1
    }

    /// `body` of the value under key number `key`, borrowed in place; `absent` when the
    /// visitor has none.
    @inline(__always)
    func withValue<R>(_ key: Int32, absent: R, _ body: (JSONValue) -> R) -> R {
        if keys.0 == key { return body(values.0) }
        if keys.1 == key { return body(values.1) }
        if keys.2 == key { return body(values.2) }
        if keys.3 == key { return body(values.3) }
        if count > 4, let index = more.firstIndex(where: { $0.key == key }) { return body(more[index].value) }
        return absent
    }
}
