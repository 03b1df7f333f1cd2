import Foundation

/// An ECMAScript regular expression (`new RegExp(source, "i")`, no `u` flag) translated to the platform engine.
///
/// The pattern is parsed with the ES2023 grammar and its Annex B extensions, then written out as an ICU pattern
/// that spells every JavaScript meaning explicitly: ASCII `\d \w \b`, JavaScript's `\s`, `.` and `$`, and the `i`
/// flag's simple upper-case matching, expanded into classes so ICU's case folding is never used for literals.
///
/// Differences from JavaScript that remain:
/// - ICU reads code points and JavaScript code units: `.`, a negated class or a lone lead-surrogate escape consumes
///   a whole astral character, a quantifier after an astral character repeats the whole character, and a lone
///   trail-surrogate escape never matches.
/// - A backreference compares with ICU's full case folding (`ß` matches `ss`, `ſ` matches `s`), and after an
///   earlier iteration of a quantified group ICU still holds that iteration's capture where JavaScript has reset it.
/// - ICU runs lookbehinds forwards and needs them bounded: unbounded repetition inside one is capped at 1,000, and
///   nested repetition of optional content inside one can exhaust ICU's backtracking stack (no match).
/// - A translation ICU refuses never matches: a backreference inside a lookbehind, or groups nested about a hundred
///   deep. Patterns nesting more than 100 groups are refused outright, as if JavaScript had.
/// - Repetition counts above 16,777,215, ICU's limit, are clamped; case mappings come from Swift's Unicode tables.
package struct ECMAScriptRegex: @unchecked Sendable {  // NSRegularExpression is immutable and thread-safe for matching
    /// The source as given.
    package let source: String
    /// The ICU pattern it was translated to.
    package let translated: String
    private let regex: NSRegularExpression?

    /// nil when JavaScript's `new RegExp(source, "i")` would throw a SyntaxError.
    package init?(_ source: String) {
        guard let translated = Self.translate(source) else { return nil }
        self.source = source
        self.translated = translated
        regex = try? NSRegularExpression(pattern: translated)
    }

    /// JS `RegExp.prototype.test`: whether the pattern matches anywhere in `text`.
    package func test(_ text: String) -> Bool {
        guard let regex else { return false }
        return regex.firstMatch(in: text, range: NSRange(location: 0, length: text.utf16.count)) != nil
    }

    /// Translation alone: the ICU pattern, or nil for a pattern JS rejects.
    package static func translate(_ source: String) -> String? {
        var parser = ECMAScriptParser(source)
        guard let parsed = try? parser.parse() else { return nil }
        var emitter = ICUEmitter(parsed: parsed)
        emitter.emit(parsed.root, behind: false)
        if emitter.unresolved {  // a lookbehind refers to a group after it; number the groups first
            emitter = ICUEmitter(parsed: parsed, numbers: emitter.numbers)
            emitter.emit(parsed.root, behind: false)
        }
        return emitter.output.isEmpty ? "(?:)" : emitter.output
    }
}

/// A parsed ECMAScript pattern. Character sets are final: case-closed for the `i` flag and already negated.
indirect enum RegexNode {
    case alternatives([RegexNode])
    case sequence([RegexNode])
    case literal(UInt16)
    case set(CodeUnitSet)
    case inputStart, inputEnd
    case wordBoundary(negated: Bool)
    case group(RegexNode, capture: Int?)
    case look(RegexNode, behind: Bool, negated: Bool)
    /// An index into `ParsedPattern.references`.
    case backreference(Int)
    case quantified(RegexNode, min: Int, max: Int?, lazy: Bool)
}

extension RegexNode {
    /// Whether the node can only match the empty string.
    var isZeroWidth: Bool {
        switch self {
        case .literal, .set, .backreference: return false
        case .inputStart, .inputEnd, .wordBoundary, .look: return true
        case .alternatives(let items), .sequence(let items): return items.allSatisfy(\.isZeroWidth)
        case .group(let body, _): return body.isZeroWidth
        case .quantified(let atom, _, let max, _): return max == 0 || atom.isZeroWidth
        }
    }
}

struct ParsedPattern {
    var root: RegexNode
    /// For each backreference, the group it reads, or nil when JavaScript always matches it as empty.
    var references: [Int?]
    /// Groups read by a backreference that may run while the group has not participated.
    var witnessed: Set<Int>
}

/// Writes a parsed pattern as ICU syntax.
struct ICUEmitter {
    static let countLimit = 16_777_215
    static let lookbehindLimit = 1_000
    static let word = CodeUnitSet.word.icuPattern

    let parsed: ParsedPattern
    private(set) var output = ""
    /// ICU group numbers of each JavaScript group and of its witness, an empty group set exactly when it is.
    private(set) var numbers: [Int: (capture: Int, witness: Int)]
    private(set) var unresolved = false
    private var nextNumber = 1

    init(parsed: ParsedPattern, numbers: [Int: (capture: Int, witness: Int)] = [:]) {
        self.parsed = parsed
        self.numbers = numbers
    }

    mutating func emit(_ node: RegexNode, behind: Bool) {
        switch node {
        case .alternatives(let items):
            for (k, item) in items.enumerated() {
                if k > 0 { output += "|" }
                emit(item, behind: behind)
            }
        case .sequence(let items):
            emitSequence(items, behind: behind)
        case .literal(let unit):
            output += Self.literal(unit)
        case .set(let set):
            output += set.icuPattern
        case .inputStart:
            output += "^"
        case .inputEnd:
            output += "\\z"  // ICU's `$` also matches before a final line terminator
        case .wordBoundary(let negated):
            let w = Self.word
            output += negated ? "(?:(?<=\(w))(?=\(w))|(?<!\(w))(?!\(w)))" : "(?:(?<=\(w))(?!\(w))|(?<!\(w))(?=\(w)))"
        case .group(let body, let capture):
            guard let capture else {
                output += "(?:"
                emit(body, behind: behind)
                output += ")"
                return
            }
            let witnessed = parsed.witnessed.contains(capture)
            let number = nextNumber
            nextNumber += 1
            output += witnessed ? "(?:(" : "("
            emit(body, behind: behind)
            output += witnessed ? ")())" : ")"
            if witnessed {
                numbers[capture] = (number, nextNumber)
                nextNumber += 1
            }
        case .look(let body, let lookbehind, let negated):
            output += "(?" + (lookbehind ? "<" : "") + (negated ? "!" : "=")
            emit(body, behind: behind || lookbehind)
            output += ")"
        case .backreference(let index):
            guard let group = parsed.references[index] else {
                output += "(?:)"
                return
            }
            guard let (capture, witness) = numbers[group] else {
                unresolved = true
                return
            }
            // ICU fails a reference to a group that has not participated where JavaScript matches empty;
            // the witness tells the two apart, since it is set exactly when the group is.
            output += "(?:(?i:\\\(capture))|(?!\\\(witness)))"
        case .quantified(let atom, let min, let max, let lazy):
            if atom.isZeroWidth {  // repeating what can only match empty is running it once (ICU errs on some)
                if min > 0 {
                    emit(atom, behind: behind)
                } else {  // JavaScript drops an iteration that matched empty; keep the groups numbered, never run
                    output += "(?:(?!)"
                    emit(atom, behind: behind)
                    output += ")?"
                }
                return
            }
            if behind, max ?? 2 > 1, case .group(let body, capture: nil) = atom {
                // Inside a lookbehind ICU mis-measures a repeated non-capturing group whose last alternative is
                // empty (`(?<=-(?:a|){1,2})c` fails on "-ac"); a spare capturing group is measured correctly.
                nextNumber += 1
                output += "("
                emit(body, behind: behind)
                output += ")"
            } else {
                emit(atom, behind: behind)
            }
            output += Self.quantifier(min: min, max: max, lazy: lazy, behind: behind)
        }
    }

    /// An escaped surrogate pair, or a raw astral character, is two literals in JavaScript and one code point in ICU.
    private mutating func emitSequence(_ items: [RegexNode], behind: Bool) {
        var k = 0
        while k < items.count {
            if case .literal(let lead) = items[k], UTF16.isLeadSurrogate(lead), k + 1 < items.count {
                var trail: UInt16?, suffix = ""
                switch items[k + 1] {
                case .literal(let unit):
                    trail = unit
                case .quantified(.literal(let unit), let min, let max, let lazy):
                    trail = unit
                    suffix = Self.quantifier(min: min, max: max, lazy: lazy, behind: behind)
                default: break
                }
                if let trail, UTF16.isTrailSurrogate(trail) {
                    output += Self.escape(0x10000 + (UInt32(lead) - 0xD800) << 10 + (UInt32(trail) - 0xDC00)) + suffix
                    k += 2
                    continue
                }
            }
            emit(items[k], behind: behind)
            k += 1
        }
    }

    private static func literal(_ unit: UInt16) -> String {
        if UTF16.isLeadSurrogate(unit) || UTF16.isTrailSurrogate(unit) { return CodeUnitSet(unit).icuPattern }
        guard let members = CaseEquivalence.classes[unit] else { return escape(UInt32(unit)) }
        return "[" + members.map { escape(UInt32($0)) }.joined() + "]"
    }

    private static func quantifier(min: Int, max: Int?, lazy: Bool, behind: Bool) -> String {
        let low = Swift.min(min, countLimit)
        var high = max.flatMap { $0 > countLimit ? nil : $0 }
        if behind && high == nil { high = Swift.max(low, lookbehindLimit) }
        // Lazy repetition is always written with braces: ICU mishandles `*?` and `+?` on an atom that can match
        // empty (`()*?a|b` fails on "b") and cannot bound `??` in a lookbehind.
        switch (low, high) {
        case (_, nil) where lazy: return "{\(low),}?"
        case (_, let high?) where lazy: return "{\(low),\(high)}?"
        case (0, nil): return "*"
        case (1, nil): return "+"
        case (0, 1): return "?"
        case (_, nil): return "{\(low),}"
        case (_, let high?) where high == low: return "{\(low)}"
        case (_, let high?): return "{\(low),\(high)}"
        }
    }

    /// A code point that ICU reads literally, in a pattern or inside a set.
    static func escape(_ value: UInt32) -> String {
        switch value {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return String(UnicodeScalar(UInt8(value)))
        case 0x21...0x7E: return "\\" + String(UnicodeScalar(UInt8(value)))
        default: return "\\x{" + String(value, radix: 16, uppercase: true) + "}"
        }
    }
}

/// A set of UTF-16 code units as sorted, disjoint ranges.
struct CodeUnitSet {
    private(set) var ranges: [ClosedRange<UInt32>]

    init() { ranges = [] }
    init(_ unit: UInt16) { ranges = [UInt32(unit)...UInt32(unit)] }
    private init(normalizing ranges: [ClosedRange<UInt32>]) { self.ranges = Self.normalized(ranges) }

    static let digits = CodeUnitSet(normalizing: [0x30...0x39])
    static let word = CodeUnitSet(normalizing: [0x30...0x39, 0x41...0x5A, 0x5F...0x5F, 0x61...0x7A])
    static let space = CodeUnitSet(normalizing: [0x09...0x0D, 0x20...0x20, 0xA0...0xA0, 0x1680...0x1680,
                                                 0x2000...0x200A, 0x2028...0x2029, 0x202F...0x202F, 0x205F...0x205F,
                                                 0x3000...0x3000, 0xFEFF...0xFEFF])
    static let dot = CodeUnitSet(normalizing: [0x0A...0x0A, 0x0D...0x0D, 0x2028...0x2029]).inverted()

    /// `\d \D \s \S \w \W`, ASCII-only for digits and word characters as in JavaScript.
    static func classEscape(_ unit: UInt16) -> CodeUnitSet? {
        switch unit {
        case 0x64: return digits
        case 0x44: return digits.inverted()
        case 0x73: return space
        case 0x53: return space.inverted()
        case 0x77: return word
        case 0x57: return word.inverted()
        default: return nil
        }
    }

    var single: UInt16? { ranges.count == 1 && ranges[0].count == 1 ? UInt16(ranges[0].lowerBound) : nil }

    mutating func insert(_ range: ClosedRange<UInt16>) {
        ranges.append(UInt32(range.lowerBound)...UInt32(range.upperBound))
    }

    mutating func formUnion(_ other: CodeUnitSet) { ranges += other.ranges }

    func inverted() -> CodeUnitSet { CodeUnitSet(normalizing: Self.complement(Self.normalized(ranges), upTo: 0xFFFF)) }

    /// Adds every code unit that the `i` flag makes equal to a member.
    func caseClosed() -> CodeUnitSet {
        let own = Self.normalized(ranges), cased = CaseEquivalence.cased
        var extra: [ClosedRange<UInt32>] = []
        for range in own {
            var low = 0, high = cased.count
            while low < high {
                let mid = (low + high) / 2
                if UInt32(cased[mid]) < range.lowerBound { low = mid + 1 } else { high = mid }
            }
            while low < cased.count, UInt32(cased[low]) <= range.upperBound {
                extra += (CaseEquivalence.classes[cased[low]] ?? []).map { UInt32($0)...UInt32($0) }
                low += 1
            }
        }
        return CodeUnitSet(normalizing: own + extra)
    }

    /// The set as an ICU bracket expression over code points. ICU never splits a surrogate pair, so a lead
    /// surrogate stands for the astral characters that start with it, and all trail surrogates for every one.
    var icuPattern: String {
        var points = Self.normalized(ranges)
        for range in points {
            let (leadLow, leadHigh) = (Swift.max(range.lowerBound, 0xD800), Swift.min(range.upperBound, 0xDBFF))
            if leadLow <= leadHigh {
                points.append(0x10000 + (leadLow - 0xD800) << 10...0x10000 + (leadHigh - 0xD800) << 10 + 0x3FF)
            }
            if range.lowerBound <= 0xDC00 && range.upperBound >= 0xDFFF { points.append(0x10000...0x10FFFF) }
        }
        points = Self.normalized(points)
        if points.isEmpty { return "(?:(?!))" }
        let complement = Self.complement(points, upTo: 0x10FFFF)
        let negated = !complement.isEmpty && complement.count < points.count
        let body = (negated ? complement : points).map { range in
            range.count == 1 ? ICUEmitter.escape(range.lowerBound)
                : ICUEmitter.escape(range.lowerBound) + "-" + ICUEmitter.escape(range.upperBound)
        }
        return (negated ? "[^" : "[") + body.joined() + "]"
    }

    private static func normalized(_ ranges: [ClosedRange<UInt32>]) -> [ClosedRange<UInt32>] {
        var result: [ClosedRange<UInt32>] = []
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = result.last, range.lowerBound <= last.upperBound + 1 {
                result[result.count - 1] = last.lowerBound...Swift.max(last.upperBound, range.upperBound)
            } else {
                result.append(range)
            }
        }
        return result
    }

    private static func complement(_ ranges: [ClosedRange<UInt32>], upTo limit: UInt32) -> [ClosedRange<UInt32>] {
        var result: [ClosedRange<UInt32>] = [], next: UInt32 = 0
        for range in ranges {
            if range.lowerBound > next { result.append(next...range.lowerBound - 1) }
            next = range.upperBound + 1
        }
        if next <= limit { result.append(next...limit) }
        return result
    }
}

/// The `i` flag without `u`: two code units match when their upper-case forms are equal, where a character whose
/// upper case is longer than one unit, or maps a non-ASCII character to ASCII (`ſ`, `ı`), stays itself.
enum CaseEquivalence {
    /// Each code unit that matches some other code unit, mapped to all the units it matches, itself included.
    static let classes: [UInt16: [UInt16]] = {
        var canonical: [UInt16: UInt16] = [:]
        for unit in 0...0xFFFF {
            guard let scalar = Unicode.Scalar(UInt32(unit)), scalar.properties.changesWhenUppercased else { continue }
            let upper = Array(scalar.properties.uppercaseMapping.utf16)
            guard upper.count == 1, upper[0] != unit, unit < 0x80 || upper[0] >= 0x80 else { continue }
            canonical[UInt16(unit)] = upper[0]
        }
        var members: [UInt16: [UInt16]] = [:]
        for (unit, upper) in canonical { members[upper, default: []].append(unit) }
        var classes: [UInt16: [UInt16]] = [:]
        for (upper, var list) in members {
            if canonical[upper] == nil { list.append(upper) }
            guard list.count > 1 else { continue }
            list.sort()
            for unit in list { classes[unit] = list }
        }
        return classes
    }()

    static let cased: [UInt16] = classes.keys.sorted()
}
