struct RegexSyntaxError: Error {}

/// A recursive-descent parser for the ES2023 pattern grammar with Annex B, in non-Unicode mode,
/// working on UTF-16 code units as JavaScript does.
struct ECMAScriptParser {
    /// A group or the whole pattern; records which alternative is being parsed and whether captures
    /// inside it can be seen after it (not after a negative lookaround or a `{0}`).
    final class Frame {
        var alternative = 0
        var discards: Bool
        /// For a lookaround: whether its contents run backwards (a lookbehind).
        let backward: Bool?
        init(discards: Bool, backward: Bool? = nil) { (self.discards, self.backward) = (discards, backward) }
    }

    typealias Context = [(frame: Frame, alternative: Int)]
    enum Target { case number(Int), name(String) }
    struct Group { let offset: Int; let context: Context; let frame: Frame }
    struct Reference { let offset: Int; let context: Context; let target: Target }

    static let nestingLimit = 100

    let units: [UInt16]
    var index = 0
    let captureCount: Int
    let hasNamedGroups: Bool
    var groups: [Group] = []
    var names: [String: Int] = [:]
    var references: [Reference] = []
    var stack = [Frame(discards: false)]

    init(_ source: String) {
        units = Array(source.utf16)
        (captureCount, hasNamedGroups) = Self.scanCaptures(units)
    }

    /// `\N` is a backreference only when N is at most the number of groups in the whole pattern,
    /// so they are counted before parsing, skipping escapes and class contents as V8 does.
    private static func scanCaptures(_ u: [UInt16]) -> (Int, Bool) {
        var count = 0, named = false, i = 0, inClass = false
        while i < u.count {
            switch u[i] {
            case 0x5C: i += 1
            case 0x5B: inClass = true
            case 0x5D: inClass = false
            case 0x28 where !inClass:
                if i + 1 < u.count, u[i + 1] == 0x3F {
                    if i + 3 < u.count, u[i + 2] == 0x3C, u[i + 3] != 0x3D, u[i + 3] != 0x21 {
                        count += 1
                        named = true
                    }
                } else {
                    count += 1
                }
            default: break
            }
            i += 1
        }
        return (count, named)
    }

    mutating func parse() throws -> ParsedPattern {
        let root = try parseDisjunction()
        if index < units.count { throw RegexSyntaxError() }  // an unmatched `)`
        var resolved: [Int?] = [], witnessed = Set<Int>()
        for reference in references {
            let number: Int
            switch reference.target {
            case .number(let n): number = n
            case .name(let name):
                guard let n = names[name] else { throw RegexSyntaxError() }
                number = n
            }
            if let n = Self.liveGroup(number, groups[number - 1], reference) {
                witnessed.insert(n)
                resolved.append(n)
            } else {
                resolved.append(nil)
            }
        }
        return ParsedPattern(root: root, references: resolved, witnessed: witnessed)
    }

    /// nil when the group can never hold a value at the reference, which JavaScript then matches as empty:
    /// the reference is inside the group or runs before it, is in another alternative, or the group's captures
    /// are discarded. Inside a lookbehind JavaScript runs a sequence from right to left.
    private static func liveGroup(_ number: Int, _ group: Group, _ reference: Reference) -> Int? {
        if reference.context.contains(where: { $0.frame === group.frame }) { return nil }
        let path = group.context + [(group.frame, 0)]
        var common = 0
        while common < min(path.count, reference.context.count),
              path[common].frame === reference.context[common].frame { common += 1 }
        let backward = path[..<common].last(where: { $0.frame.backward != nil })?.frame.backward ?? false
        if (group.offset >= reference.offset) != backward { return nil }  // a reference's offset is its end
        if path[common - 1].alternative != reference.context[common - 1].alternative { return nil }
        return path[common...].contains(where: { $0.frame.discards }) ? nil : number
    }

    // MARK: Terms

    var peek: UInt16? { index < units.count ? units[index] : nil }

    func peek(_ offset: Int) -> UInt16? { index + offset < units.count ? units[index + offset] : nil }

    mutating func eat(_ unit: UInt16) -> Bool {
        guard peek == unit else { return false }
        index += 1
        return true
    }

    mutating func parseDisjunction() throws -> RegexNode {
        var alternatives = [try parseAlternative()]
        while eat(0x7C) {
            stack[stack.count - 1].alternative += 1
            alternatives.append(try parseAlternative())
        }
        return alternatives.count == 1 ? alternatives[0] : .alternatives(alternatives)
    }

    mutating func parseAlternative() throws -> RegexNode {
        var terms: [RegexNode] = []
        while let unit = peek, unit != 0x7C, unit != 0x29 { terms.append(try parseTerm()) }
        return .sequence(terms)
    }

    mutating func parseTerm() throws -> RegexNode {
        let unit = units[index]
        index += 1
        let atom: RegexNode, frame: Frame?
        switch unit {
        case 0x5E: return .inputStart
        case 0x24: return .inputEnd
        case 0x5C where peek == 0x62 || peek == 0x42:  // \b \B
            index += 1
            return .wordBoundary(negated: units[index - 1] == 0x42)
        case 0x28: (atom, frame) = try parseGroup()
            if case .look(_, behind: true, _) = atom { return atom }  // a lookbehind cannot be quantified
        case 0x2E: atom = .set(CodeUnitSet.dot); frame = nil
        case 0x5B: atom = .set(try parseClass()); frame = nil
        case 0x5C: atom = try parseAtomEscape(); frame = nil
        case 0x2A, 0x2B, 0x3F: throw RegexSyntaxError()  // nothing to repeat
        case 0x7B where braceQuantifier(at: index - 1) != nil: throw RegexSyntaxError()
        default: atom = .literal(unit); frame = nil
        }
        guard let (min, max) = try parseQuantifier() else { return atom }
        let lazy = eat(0x3F)
        if max == 0 { frame?.discards = true }
        if atom.isZeroWidth, min == 0 { frame?.discards = true }  // JavaScript drops an iteration that matched empty
        return .quantified(atom, min: min, max: max, lazy: lazy)
    }

    mutating func parseQuantifier() throws -> (Int, Int?)? {
        switch peek {
        case 0x2A: index += 1; return (0, nil)
        case 0x2B: index += 1; return (1, nil)
        case 0x3F: index += 1; return (0, 1)
        case 0x7B:
            guard let (min, max, end) = braceQuantifier(at: index) else { return nil }
            if let max, max < min { throw RegexSyntaxError() }
            index = end
            return (min, max)
        default: return nil
        }
    }

    /// `{n}`, `{n,}` or `{n,m}` at `start`, with the index after it; any other brace is a literal (Annex B).
    func braceQuantifier(at start: Int) -> (Int, Int?, Int)? {
        var i = start + 1
        func number() -> Int? {
            var value: Int?
            while i < units.count, (0x30...0x39).contains(units[i]) {
                value = Swift.min((value ?? 0) * 10 + Int(units[i] - 0x30), Int(Int32.max))
                i += 1
            }
            return value
        }
        guard let min = number() else { return nil }
        var max: Int? = min
        if i < units.count, units[i] == 0x2C {
            i += 1
            max = number()
        }
        guard i < units.count, units[i] == 0x7D else { return nil }
        return (min, max, i + 1)
    }

    mutating func parseGroup() throws -> (RegexNode, Frame) {
        let start = index - 1
        var capture: Int?, look: (behind: Bool, negated: Bool)?
        if eat(0x3F) {
            if eat(0x3A) {
            } else if eat(0x3D) || eat(0x21) {
                look = (false, units[index - 1] == 0x21)
            } else if eat(0x3C) {
                if eat(0x3D) || eat(0x21) {
                    look = (true, units[index - 1] == 0x21)
                } else {
                    let name = try parseGroupName()
                    guard names[name] == nil else { throw RegexSyntaxError() }
                    names[name] = groups.count + 1
                    capture = groups.count + 1
                }
            } else {
                throw RegexSyntaxError()  // includes ICU-only (?i) (?#…) (?>…)
            }
        } else {
            capture = groups.count + 1
        }
        // ICU refuses a hundred nested groups, and the limit keeps the recursive parser off the end of the stack.
        guard stack.count <= Self.nestingLimit else { throw RegexSyntaxError() }
        let frame = Frame(discards: look?.negated ?? false, backward: look?.behind)
        if capture != nil { groups.append(Group(offset: start, context: context, frame: frame)) }
        stack.append(frame)
        let body = try parseDisjunction()
        stack.removeLast()
        guard eat(0x29) else { throw RegexSyntaxError() }
        if let look { return (.look(body, behind: look.behind, negated: look.negated), frame) }
        return (.group(body, capture: capture), frame)
    }

    var context: Context { stack.map { ($0, $0.alternative) } }

    /// `<RegExpIdentifierName>`, whose `\u` escapes may use braces even without the `u` flag.
    mutating func parseGroupName() throws -> String {
        var scalars = String.UnicodeScalarView()
        while !eat(0x3E) {
            guard var unit = peek else { throw RegexSyntaxError() }
            index += 1
            var value = UInt32(unit)
            if unit == 0x5C {
                guard eat(0x75) else { throw RegexSyntaxError() }
                if eat(0x7B) {
                    let start = index
                    while let u = peek, hexValue(u) != nil { index += 1 }
                    let digits = String(decoding: units[start..<index], as: UTF16.self)
                    guard let v = UInt32(digits, radix: 16), v <= 0x10FFFF, eat(0x7D) else { throw RegexSyntaxError() }
                    value = v
                } else {
                    guard let v = hex(count: 4, after: 0) else { throw RegexSyntaxError() }
                    index += 4
                    value = v
                    unit = UInt16(v)
                }
            }
            if UTF16.isLeadSurrogate(unit), value == UInt32(unit) {
                if let trail = peek, UTF16.isTrailSurrogate(trail) {
                    index += 1
                    value = 0x10000 + (value - 0xD800) << 10 + UInt32(trail - 0xDC00)
                } else if peek == 0x5C, peek(1) == 0x75, let trail = hex(count: 4, after: 2),
                          UTF16.isTrailSurrogate(UInt16(trail)) {
                    index += 6
                    value = 0x10000 + (value - 0xD800) << 10 + (trail - 0xDC00)
                }
            }
            guard let scalar = Unicode.Scalar(value) else { throw RegexSyntaxError() }
            let allowed = scalars.isEmpty
                ? scalar.properties.isIDStart || scalar == "$" || scalar == "_"
                : scalar.properties.isIDContinue || scalar == "$" || scalar == "\u{200C}" || scalar == "\u{200D}"
            guard allowed else { throw RegexSyntaxError() }
            scalars.append(scalar)
        }
        guard !scalars.isEmpty else { throw RegexSyntaxError() }
        return String(scalars)
    }

    // MARK: Escapes

    mutating func parseAtomEscape() throws -> RegexNode {
        guard let unit = peek else { throw RegexSyntaxError() }
        if let set = CodeUnitSet.classEscape(unit) {
            index += 1
            return .set(set)
        }
        switch unit {
        case 0x31...0x39:
            let start = index
            var n = 0
            while let d = peek, (0x30...0x39).contains(d) {
                n = min(n * 10 + Int(d - 0x30), Int(Int32.max))
                index += 1
            }
            if n <= captureCount { return reference(.number(n)) }
            index = start
        case 0x6B where hasNamedGroups:
            index += 1
            guard eat(0x3C) else { throw RegexSyntaxError() }
            return reference(.name(try parseGroupName()))
        case 0x63 where !(peek(1).map(isASCIILetter) ?? false):
            return .literal(0x5C)  // `\c` without a control letter is a backslash; `c` is read next
        default: break
        }
        return .literal(try parseCharacterEscape(inClass: false))
    }

    mutating func reference(_ target: Target) -> RegexNode {
        references.append(Reference(offset: index, context: context, target: target))
        return .backreference(references.count - 1)
    }

    /// The code unit of a CharacterEscape (Annex B), the backslash already read.
    mutating func parseCharacterEscape(inClass: Bool) throws -> UInt16 {
        let unit = units[index]
        index += 1
        switch unit {
        case 0x66: return 0x0C
        case 0x6E: return 0x0A
        case 0x72: return 0x0D
        case 0x74: return 0x09
        case 0x76: return 0x0B
        case 0x63:
            // Inside a class a digit or `_` also makes a control character.
            if let letter = peek, isASCIILetter(letter) || inClass && (letter == 0x5F || (0x30...0x39) ~= letter) {
                index += 1
                return letter % 32
            }
            index -= 1
            return 0x5C
        case 0x30...0x37:  // legacy octal, at most 0o377
            var value = unit - 0x30
            if let d = peek, (0x30...0x37).contains(d) {
                value = value * 8 + d - 0x30
                index += 1
                if value < 32, let d = peek, (0x30...0x37).contains(d) {
                    value = value * 8 + d - 0x30
                    index += 1
                }
            }
            return value
        case 0x78, 0x75:
            let count = unit == 0x78 ? 2 : 4
            guard let value = hex(count: count, after: 0) else { return unit }
            index += count
            return UInt16(value)
        case 0x6B where hasNamedGroups: throw RegexSyntaxError()
        default: return unit
        }
    }

    func hex(count: Int, after offset: Int) -> UInt32? {
        var value: UInt32 = 0
        for k in 0..<count {
            guard let digit = peek(offset + k).flatMap(hexValue) else { return nil }
            value = value * 16 + digit
        }
        return value
    }

    func hexValue(_ unit: UInt16) -> UInt32? {
        switch unit {
        case 0x30...0x39: return UInt32(unit - 0x30)
        case 0x41...0x46: return UInt32(unit - 0x37)
        case 0x61...0x66: return UInt32(unit - 0x57)
        default: return nil
        }
    }

    func isASCIILetter(_ unit: UInt16) -> Bool { (0x61...0x7A).contains(unit | 0x20) }

    // MARK: Classes
}
