/// Character classes (`[...]`) of an ECMAScript pattern.
extension ECMAScriptParser {

    mutating func parseClass() throws -> CodeUnitSet {
        let negated = eat(0x5E)
        var set = CodeUnitSet()
        while !eat(0x5D) {
            let first = try parseClassAtom()
            guard peek == 0x2D, let after = peek(1), after != 0x5D else {
                set.formUnion(first)
                continue
            }
            index += 1
            let second = try parseClassAtom()
            if let low = first.single, let high = second.single {
                guard low <= high else { throw RegexSyntaxError() }
                set.insert(low...high)
            } else {  // Annex B: a class escape at either end makes the three atoms a union
                set.formUnion(first)
                set.insert(0x2D...0x2D)
                set.formUnion(second)
            }
        }
        let closed = set.caseClosed()
        return negated ? closed.inverted() : closed
    }

    mutating func parseClassAtom() throws -> CodeUnitSet {
        guard let unit = peek else { throw RegexSyntaxError() }
        index += 1
        guard unit == 0x5C else { return CodeUnitSet(unit) }
        guard let next = peek else { throw RegexSyntaxError() }
        if let set = CodeUnitSet.classEscape(next) {
            index += 1
            return set
        }
        if next == 0x62 {
            index += 1
            return CodeUnitSet(0x08)
        }
        // Decimal escapes are octal or identity escapes inside a class; `\8` and `\9` fall through as identity.
        return CodeUnitSet(try parseCharacterEscape(inClass: true))
    }
}
