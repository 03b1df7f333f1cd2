import ConvertRules
import Foundation
import Testing

// Expected values are what Convert's JavaScript SDK (its rule manager and comparison processor,
// on Node's String/Number semantics) returns for the same leaf and data.

/// `check`, asserting that the evaluating path (`evaluate`) agrees with the fast one (`matches`).
private func both(_ data: [String: JSONValue], _ key: String, _ match: String, _ value: JSONValue?,
                  sourceLocation: SourceLocation = #_sourceLocation) -> (plain: Bool, negated: Bool) {
    let plain = rule(key, match, value), negated = rule(key, match, value, negated: true)
    #expect(plain.matches(data) == plain.evaluate(data).matched, sourceLocation: sourceLocation)
    #expect(negated.matches(data) == negated.evaluate(data).matched, sourceLocation: sourceLocation)
    return (plain.matches(data), negated.matches(data))
}

@Suite struct PresenceParityTests {
    @Test func aNegatedExistsMatchesWhenTheKeyIsAbsent() {
        #expect(both(["other": "v"], "k", "exists", nil) == (false, true))
    }

    @Test func existsAndDoesNotExistOnEmptyDataAreEvaluatedOnUndefined() {
        #expect(both([:], "k", "exists", nil) == (false, true))
        #expect(both([:], "k", "doesNotExist", nil) == (true, false))
        #expect(both([:], "k", "doesNotExist", "") == (true, false))
    }

    @Test func otherOperatorsOnEmptyDataAreFalseEvenNegated() {
        #expect(both([:], "k", "equals", "x") == (false, false))
        #expect(both([:], "k", "not_exists", "") == (false, false))
        #expect(rule("k", "not_exists", "").evaluate([:]).verdict == .emptyData)
    }

    @Test func notExistsOnAnAbsentKeyIsFalseAndNeedsAValue() {
        #expect(both(["other": 1], "k", "not_exists", "") == (false, false))
        #expect(both(["k": ""], "k", "not_exists", "") == (true, false))
        guard case .invalidLeaf? = rule("k", "not_exists", nil).evaluate(["k": ""]).verdict else {
            Issue.record("a not_exists leaf without a value is invalid")
            return
        }
    }
}

@Suite struct TextParityTests {
    @Test func lowerCasingAppliesTheFinalSigmaRule() {
        // "ΣΑΣ".toLowerCase() is "σας", so it is not equal to "σασ".
        #expect(both(["w": "σασ"], "w", "equals", "ΣΑΣ") == (false, true))
        #expect(both(["w": "σας"], "w", "equals", "ΣΑΣ") == (true, false))
        #expect(both(["w": "ΟΔΥΣΣΕΥΣ"], "w", "equals", "οδυσσευς") == (true, false))
        // A sigma followed by a letter after a case-ignorable apostrophe is not final: "aσ'b".
        #expect(both(["w": "AΣ'B"], "w", "startsWith", "aσ'") == (true, false))
        // A lone capital sigma has no cased letter before it: "σ".
        #expect(both(["w": "Σ"], "w", "equals", "σ") == (true, false))
        #expect(both(["w": "AΣ."], "w", "endsWith", "ς.") == (true, false))
    }

    @Test func containsTreatsJavaScriptWhiteSpaceAsBlank() {
        for blank in ["", " ", "\u{FEFF}", "\u{00A0}", "\u{1680}", "\u{2000}", "\u{200A}", "\u{2028}", "\u{202F}",
                      "\u{205F}", "\u{3000}", "\t\u{000B}\u{000C}"] {
            #expect(both(["s": "abc"], "s", "contains", .string(blank)) == (true, false), "\(blank.unicodeScalars.map(\.value))")
        }
    }

    @Test func containsDoesNotTreatOtherSpacesAsBlank() {
        // U+0085, U+180E and U+200B are not JS white space: they are searched for like any text.
        for text in ["\u{0085}", "\u{180E}", "\u{200B}"] {
            #expect(both(["s": "abc"], "s", "contains", .string(text)) == (false, true))
            #expect(both(["s": .string("a\(text)b")], "s", "contains", .string(text)) == (true, false))
        }
    }

    @Test func lessComparesTwoBooleansAsJavaScriptDoes() {
        #expect(both(["b": false], "b", "less", true) == (true, false))
        #expect(both(["b": true], "b", "lessEqual", true) == (true, false))
        #expect(both(["b": true], "b", "less", 1) == (false, false), "different typeof: false, not negated")
    }

    @Test func numericStringsThatOverflowStayStrings() {
        // isNumeric() refuses a value parseFloat reads as Infinity, so two strings compare as text.
        let huge = String(repeating: "9", count: 400)
        #expect(both(["n": .string(huge)], "n", "less", "a") == (true, false))
    }
}

@Suite struct NumberParityTests {
    // Number(x) as Node prints it.
    @Test func numberReadsValuesAsJavaScriptsNumberDoes() {
        let cases: [(JSONValue?, String)] = [
            (nil, "NaN"), (.null, "0"), (true, "1"), (false, "0"), ("", "0"), ("  ", "0"), (" 12 ", "12"),
            ("12", "12"), ("1e3", "1000"), ("0x1F", "31"), ("0o17", "15"), ("0b101", "5"), ("-0x10", "NaN"),
            ("+5", "5"), ("-5.5", "-5.5"), (".5", "0.5"), ("5.", "5"), ("1.e2", "100"), ("Infinity", "Infinity"),
            ("-Infinity", "-Infinity"), ("infinity", "NaN"), ("1_000", "NaN"), ("12px", "NaN"),
            ("\u{00A0}12\u{FEFF}", "12"), ("\u{0085} 12", "NaN"), ([], "0"), ([12], "12"), (["7"], "7"),
            ([1, 2], "NaN"), ([true], "NaN"), ([.null], "0"), ([[3]], "3"), ([:], "NaN"), (50, "50"), ("0x", "NaN"),
            ("1e", "NaN"), ("e5", "NaN"),
        ]
        for (value, expected) in cases {
            #expect(JavaScriptNumber.string(JavaScriptNumber.number(value)) == expected, "Number(\(String(describing: value)))")
        }
    }

    @Test func parseIntAndParseFloatSkipJavaScriptWhiteSpaceOnly() {
        #expect(JavaScriptNumber.parseInt("\u{FEFF}42") == 42)
        #expect(JavaScriptNumber.parseFloat("\u{3000} 1.5") == 1.5)
        #expect(JavaScriptNumber.parseInt("\u{0085}42") == nil)
    }

    @Test func nonFiniteNumbersEncodeAsNullAsJSONStringifyDoes() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let value: JSONValue = ["a": .number(.infinity), "b": .number(-.infinity), "c": 2]
        #expect(String(decoding: try encoder.encode(value), as: UTF8.self) == #"{"a":null,"b":null,"c":2}"#)
    }
}

@Suite struct DeepMergeParityTests {
    @Test func laterValuesWinAndArraysAreUnitedNewestFirst() {
        let stored: [String: JSONValue] = ["country": "US", "customSegments": ["1", "2"], "browser": "FF"]
        let attributes: [String: JSONValue] = ["country": "NL", "customSegments": ["3", "1"], "plan": "pro"]
        let merged = JSONValue.deepMerging(stored, attributes)
        #expect(merged == ["country": "NL", "customSegments": ["3", "1", "2"], "browser": "FF", "plan": "pro"])
    }

    @Test func objectsMergeMemberByMember() {
        let merged = JSONValue.deepMerging(["o": ["a": 1, "b": 2]], ["o": ["b": 3, "c": ["x": true]]])
        #expect(merged == ["o": ["a": 1, "b": 3, "c": ["x": true]]])
    }

    @Test func mixedKindsTakeTheNewValueOrMergeIntoAnObject() {
        #expect(JSONValue.deepMerging(["k": ["a"]], ["k": "b"]) == ["k": "b"])
        #expect(JSONValue.deepMerging(["k": "a"], ["k": ["b"]]) == ["k": ["b"]])
        #expect(JSONValue.deepMerging(["k": ["a"]], ["k": ["x": 1]]) == ["k": ["0": "a", "x": 1]])
        #expect(JSONValue.deepMerging(["k": ["x": 1]], ["k": ["a"]]) == ["k": ["x": 1, "0": "a"]])
    }
}
